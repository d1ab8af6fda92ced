// Flux2Transformer2DModel parity against diffusers: fixtures from tools/make_flux2_fixtures.py hold
// a tiny random model saved by diffusers, its inputs (packed latents, text states, sigmas, 4-axis
// ids, guidance) and diffusers' output.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>

#include "io/io_test_util.h"
#include "io/safetensors.h"
#include "models/flux2_transformer.h"
#include "runtime/engine.h"
#include "support/test_util.h"

namespace quill {
namespace {

struct Loaded {
  std::unique_ptr<Engine<Flux2Transformer>> engine;
  std::vector<float> hs, ehs, t, g, img_ids, txt_ids, expected;
  Flux2Bucket bucket;
  Flux2Inputs inputs() const {
    return {hs.data(), ehs.data(), t.data(), g.empty() ? nullptr : g.data(), img_ids.data(), txt_ids.data()};
  }
};

Loaded load_case(const std::string& name, ThreadPool& pool) {
  Loaded l;
  const std::string dir = test::fixture("flux2/" + name);
  auto engine = open_engine<Flux2Transformer>(dir, pool);
  EXPECT_TRUE(engine.is_ok()) << engine.status().to_string();
  if (!engine) return l;
  l.engine = std::move(*engine);
  auto in = SafetensorsFile::open(dir + "/inputs.safetensors").value();
  auto ex = SafetensorsFile::open(dir + "/expected.safetensors").value();
  const Tensor hs = in->tensor("hidden_states").value();
  const Tensor ehs = in->tensor("encoder_hidden_states").value();
  l.hs = hs.to_f32_vector();
  l.ehs = ehs.to_f32_vector();
  l.t = in->tensor("timestep").value().to_f32_vector();
  if (in->find("guidance")) l.g = in->tensor("guidance").value().to_f32_vector();
  l.img_ids = in->tensor("img_ids").value().to_f32_vector();
  l.txt_ids = in->tensor("txt_ids").value().to_f32_vector();
  l.expected = ex->tensor("sample").value().to_f32_vector();
  l.bucket = {hs.dim(0), hs.dim(1), ehs.dim(1)};
  return l;
}

class Flux2Parity : public ::testing::TestWithParam<const char*> {};

TEST_P(Flux2Parity, MatchesDiffusers) {
  ThreadPool pool(2);
  Loaded l = load_case(GetParam(), pool);
  ASSERT_TRUE(l.engine);
  std::vector<float> out(l.expected.size(), NAN);
  Status st = l.engine->forward(l.bucket, l.inputs(), out.data());
  ASSERT_TRUE(st.is_ok()) << st.to_string();
  const double rel = test::rel_l2(out, l.expected);
  RecordProperty("rel_l2", std::to_string(rel));
  std::printf("%s rel_l2 %.3g\n", GetParam(), rel);
  EXPECT_LE(rel, 1e-4) << GetParam();
  // The plan is reused, bit for bit.
  std::vector<float> again(out.size(), NAN);
  ASSERT_TRUE(l.engine->forward(l.bucket, l.inputs(), again.data()).is_ok());
  EXPECT_EQ(l.engine->plan_stats().builds, 1u);
  EXPECT_EQ(test::rel_l2(again, out), 0.0);
}

INSTANTIATE_TEST_SUITE_P(Fixtures, Flux2Parity, ::testing::Values("double_single", "reference", "irregular", "q128"),
                         [](const auto& info) { return std::string(info.param); });

TEST(Flux2Parity, EveryInputMatters) {
  // A forward that ignored the text ids, the image ids or the guidance would still run; each
  // changed here must change the output.
  ThreadPool pool(2);
  Loaded l = load_case("reference", pool);
  ASSERT_TRUE(l.engine);
  std::vector<float> base(l.expected.size());
  ASSERT_TRUE(l.engine->forward(l.bucket, l.inputs(), base.data()).is_ok());
  auto changed = [&](std::vector<float>& v) {
    v[0] += 3.0f;
    std::vector<float> out(base.size());
    EXPECT_TRUE(l.engine->forward(l.bucket, l.inputs(), out.data()).is_ok());
    v[0] -= 3.0f;
    return test::rel_l2(out, base);
  };
  EXPECT_GT(changed(l.txt_ids), 1e-6);
  EXPECT_GT(changed(l.img_ids), 1e-6);
  EXPECT_GT(changed(l.g), 1e-6);
}

// A Black Forest Labs checkpoint (fused q/k/v, `.scale` norms, final adaLN as (shift, scale), no
// config.json) of the double_single model: the config is inferred from the shapes and the
// forward is diffusers' output for that model, with and without ComfyUI's "model.diffusion_model."
// prefix.
TEST(Flux2Parity, BflCheckpointWithoutConfigMatchesDiffusers) {
  ThreadPool pool(2);
  Loaded ref = load_case("double_single", pool);
  ASSERT_TRUE(ref.engine);
  testing::TempDir dir;
  const std::string bfl = test::fixture("flux2/bfl/flux2-tiny-bfl.safetensors");
  auto src = SafetensorsFile::open(bfl).value();
  std::vector<std::pair<std::string, Tensor>> prefixed;
  for (const auto& t : src->tensors()) prefixed.emplace_back("model.diffusion_model." + t.name, src->tensor(t.name).value());
  const std::string prefixed_path = dir.file("prefixed.safetensors");
  ASSERT_TRUE(write_safetensors(prefixed_path, prefixed, {}).is_ok());
  for (const std::string& path : {bfl, prefixed_path}) {
    auto engine = open_engine<Flux2Transformer>(path, pool);
    ASSERT_TRUE(engine.is_ok()) << engine.status().to_string();
    const Flux2Config& c = (*engine)->model().config();
    EXPECT_EQ(c.num_layers, 2);
    EXPECT_EQ(c.num_single_layers, 3);
    EXPECT_EQ(c.num_attention_heads, 2);
    EXPECT_EQ(c.mlp_hidden(), 96);
    EXPECT_FALSE(c.guidance_embeds);
    std::vector<float> out(ref.expected.size(), NAN);
    Status st = (*engine)->forward(ref.bucket, ref.inputs(), out.data());
    ASSERT_TRUE(st.is_ok()) << st.to_string();
    EXPECT_LE(test::rel_l2(out, ref.expected), 1e-4) << path;
  }
}

TEST(Flux2Config, RejectsInconsistentConfigs) {
  const std::pair<const char*, const char*> bad[] = {
      {R"({"attention_head_dim": 16, "axes_dims_rope": [4, 4, 4]})", "must add up to attention_head_dim"},
      {R"({"attention_head_dim": 12, "axes_dims_rope": [3, 3, 3, 3]})", "positive even integers"},
      {R"({"rope_theta": 0})", "rope_theta"},
      {R"({"mlp_ratio": -1})", "mlp_ratio"},
      {R"({"num_attention_heads": 0})", "num_attention_heads"},
      {R"({"guidance_embeds": "yes"})", "guidance_embeds"},
  };
  for (const auto& [text, phrase] : bad) {
    auto c = Flux2Config::from_json(nlohmann::json::parse(text), "config.json");
    ASSERT_FALSE(c.is_ok()) << text;
    EXPECT_NE(c.status().to_string().find(phrase), std::string::npos) << c.status().to_string();
  }
  auto ok = Flux2Config::from_json(nlohmann::json::parse(R"({"out_channels": null, "in_channels": 64})"), "c");
  ASSERT_TRUE(ok.is_ok()) << ok.status().to_string();
  EXPECT_EQ(ok->out_channels, 64);
}

}  // namespace
}  // namespace quill
