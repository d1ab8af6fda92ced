// The sampling loop stops at the first step whose latents are not finite (no black image from
// NaN), naming the step; finite velocities run every step.
#include <gtest/gtest.h>

#include <limits>

#include "pipeline/flow_sampler.h"

namespace quill {
namespace {

FlowLoop three_steps() {
  FlowLoop loop;
  loop.batch = 1;
  loop.per_sample = 4;
  loop.sigmas = {1.0f, 0.6f, 0.3f, 0.0f};
  loop.timesteps = {1000.0f, 600.0f, 300.0f};
  return loop;
}

TEST(FlowLoopFinite, NonFiniteVelocityStopsAtThatStep) {
  std::vector<float> x(4, 0.5f);
  int calls = 0;
  Status st = run_flow_loop(three_steps(), x, [&](const float*, int64_t MB, float, float* v) {
    for (int64_t i = 0; i < MB * 4; ++i) v[i] = calls == 1 ? std::numeric_limits<float>::quiet_NaN() : 0.1f;
    ++calls;
    return Status::ok();
  });
  ASSERT_FALSE(st.is_ok());
  EXPECT_EQ(st.code(), ErrorCode::kNonFinite);
  EXPECT_NE(st.message().find("step 2 of 3"), std::string::npos) << st.to_string();
  EXPECT_EQ(calls, 2);
}

TEST(FlowLoopFinite, FiniteVelocitiesRunEveryStep) {
  std::vector<float> x(4, 0.5f);
  int calls = 0;
  Status st = run_flow_loop(three_steps(), x, [&](const float*, int64_t MB, float, float* v) {
    for (int64_t i = 0; i < MB * 4; ++i) v[i] = 0.1f;
    ++calls;
    return Status::ok();
  });
  ASSERT_TRUE(st.is_ok()) << st.to_string();
  EXPECT_EQ(calls, 3);
  EXPECT_FLOAT_EQ(x[0], 0.5f - 0.1f);
}

}  // namespace
}  // namespace quill
