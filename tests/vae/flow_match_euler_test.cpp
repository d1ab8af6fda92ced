// FlowMatchEulerDiscreteScheduler against diffusers (tools/make_scheduler_fixtures.py): sigmas and
// timesteps bit for bit, Euler steps, calculate_shift.
#include <gtest/gtest.h>

#include <fstream>

#include "pipeline/flow_match_euler.h"
#include "support/test_util.h"

namespace quill {
namespace {

nlohmann::json load_fixture() {
  std::ifstream in(test::fixture("scheduler/flow_match_euler.json"));
  EXPECT_TRUE(in.good());
  return nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
}

std::vector<float> floats(const nlohmann::json& j) {
  std::vector<float> v;
  for (const auto& x : j) v.push_back(float(x.get<double>()));
  return v;
}

TEST(FlowMatchEuler, SchedulesMatchDiffusersExactly) {
  const auto fx = load_fixture();
  ASSERT_TRUE(fx.is_object());
  ASSERT_GE(fx["cases"].size(), 15u);
  for (const auto& c : fx["cases"]) {
    auto cfg = FlowMatchEulerConfig::from_json(c["config"]);
    ASSERT_TRUE(cfg.is_ok()) << cfg.status().to_string();
    FlowMatchEulerScheduler s(*cfg);
    std::optional<double> mu;
    if (!c["mu"].is_null()) mu = c["mu"].get<double>();
    std::vector<float> custom;
    if (!c["custom_sigmas"].is_null()) custom = floats(c["custom_sigmas"]);
    ASSERT_TRUE(s.set_timesteps(c["steps"].get<int>(), mu, custom.empty() ? nullptr : &custom).is_ok());
    const auto sig = floats(c["sigmas"]), ts = floats(c["timesteps"]);
    const std::string what = c["config"].dump() + " steps " + std::to_string(c["steps"].get<int>());
    ASSERT_EQ(s.sigmas().size(), sig.size()) << what;
    ASSERT_EQ(s.timesteps().size(), ts.size()) << what;
    for (size_t i = 0; i < sig.size(); ++i) EXPECT_EQ(s.sigmas()[i], sig[i]) << what << " sigma " << i;
    for (size_t i = 0; i < ts.size(); ++i) EXPECT_EQ(s.timesteps()[i], ts[i]) << what << " timestep " << i;
  }
}

TEST(FlowMatchEuler, EulerStepsMatchDiffusers) {
  const auto fx = load_fixture();
  const auto& e = fx["euler"];
  auto cfg = FlowMatchEulerConfig::from_json(e["config"]);
  ASSERT_TRUE(cfg.is_ok());
  FlowMatchEulerScheduler s(*cfg);
  ASSERT_TRUE(s.set_timesteps(e["steps"].get<int>()).is_ok());
  auto x = floats(e["x0"]);
  for (int i = 0; i < s.num_steps(); ++i) {
    const auto v = floats(e["v"][size_t(i)]), want = floats(e["x"][size_t(i)]);
    ASSERT_TRUE(s.step(i, v.data(), x.data(), int64_t(x.size())).is_ok());
    for (size_t j = 0; j < x.size(); ++j) ASSERT_EQ(x[j], want[j]) << "step " << i << " element " << j;
  }
  EXPECT_FALSE(s.step(s.num_steps(), x.data(), x.data(), 1).is_ok());
}

TEST(FlowMatchEuler, CalculateShiftMatchesPipeline) {
  const auto fx = load_fixture();
  for (const auto& c : fx["calculate_shift"])
    EXPECT_EQ(flow_match_calculate_shift(c["seq"].get<int64_t>()), c["mu"].get<double>()) << c.dump();
}

TEST(FlowMatchEuler, ConfigErrors) {
  EXPECT_EQ(FlowMatchEulerConfig::from_json(nlohmann::json::parse(R"({"use_karras_sigmas": true})")).status().code(),
            ErrorCode::kUnsupported);
  EXPECT_EQ(FlowMatchEulerConfig::from_json(nlohmann::json::parse(R"({"time_shift_type": "cubic"})")).status().code(),
            ErrorCode::kInvalidFile);
  // Numbers are checked, not converted: an integer key given 4.7e69 (fuzz/model_config_fuzz: its
  // float -> int64 conversion was undefined) or 2.5 (silently 2 before), a float key given a string.
  for (const char* bad : {R"({"max_image_seq_len": 4.7e69})", R"({"num_train_timesteps": 2.5})", R"({"shift": "3"})",
                          R"({"invert_sigmas": 1})"}) {
    auto r = FlowMatchEulerConfig::from_json(nlohmann::json::parse(bad));
    ASSERT_FALSE(r.is_ok()) << bad;
    const std::string key = nlohmann::json::parse(bad).begin().key();
    EXPECT_NE(r.status().to_string().find("scheduler config key '" + key + "' must be"), std::string::npos)
        << r.status().to_string();
  }
  EXPECT_TRUE(FlowMatchEulerConfig::from_json(nlohmann::json::parse(R"({"shift": 3, "base_shift": 0})")).is_ok());
  auto cfg = FlowMatchEulerConfig::from_json(nlohmann::json::parse(R"({"use_dynamic_shifting": true})"));
  ASSERT_TRUE(cfg.is_ok());
  FlowMatchEulerScheduler s(*cfg);
  EXPECT_EQ(s.set_timesteps(4).code(), ErrorCode::kInvalidArgument);  // mu missing
  EXPECT_EQ(s.set_timesteps(0, 1.0).code(), ErrorCode::kInvalidArgument);
}

}  // namespace
}  // namespace quill
