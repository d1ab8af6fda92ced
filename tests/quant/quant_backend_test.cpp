// The CPU backend's linear runs block-quantized weights through quant_linear. The tiny SD3
// fixtures have D = 32, so no weight there has K % 128 == 0; this uses random-weight linears.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <optional>
#include <vector>

#include "../backend/op_test_util.h"
#include "backend/cpu/cpu_backend.h"
#include "quant/formats.h"
#include "quant/quant_linear.h"
#include "backend/cpu/kernel_table.h"
#include "runtime/dispatcher.h"
#include "support/scoped_env.h"

namespace quill {
namespace {

using test::nan_filled;
using test::random_normal;

double rel_err(const std::vector<float>& a, const std::vector<float>& ref) {
  double num = 0, den = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    if (!std::isfinite(a[i])) return INFINITY;
    num = std::max(num, std::fabs(double(a[i]) - ref[i]));
    den = std::max(den, std::fabs(double(ref[i])));
  }
  return num / den;
}

void check(DType dt, const char* mode_env, double bound) {
  if (mode_env)
    setenv("QUILL_TERNARY_MODE", mode_env, 1);
  else
    unsetenv("QUILL_TERNARY_MODE");
  ThreadPool pool(2);
  CpuBackend cpu(pool);
  Dispatcher disp(&cpu);
  const int64_t M = 600, K = 256, N = 48;  // M above quant_linear's row chunk
  std::vector<float> wf = random_normal(size_t(N * K), 4, 0.05f, 0.0f);
  auto q = quant::quantize_tensor(Tensor(wf.data(), DType::kF32, Shape{N, K}), dt);
  ASSERT_TRUE(q.is_ok());
  auto deq = quant::dequantize_tensor(*q);
  ASSERT_TRUE(deq.is_ok());
  const size_t floats = std::max(op_linear_scratch_floats(*q, pool), op_linear_scratch_floats(*deq, pool));
  std::vector<float> scratch(floats);
  OpScratch s;
  s.linear = scratch.data();
  s.linear_floats = floats;
  disp.set_scratch(s);
  const std::vector<float> x = random_normal(size_t(M * K), 5), bias = random_normal(size_t(N), 6);
  std::vector<float> y = nan_filled(size_t(M * N)), ref = nan_filled(size_t(M * N));
  ASSERT_TRUE(disp.linear(x.data(), M, *q, bias.data(), y.data()).is_ok());
  ASSERT_TRUE(disp.linear(x.data(), M, *deq, bias.data(), ref.data()).is_ok());
  EXPECT_LE(rel_err(y, ref), bound) << dtype_name(dt) << " " << (mode_env ? mode_env : "exact");
  EXPECT_EQ(disp.stats().runs[size_t(OpKind::kLinear)][0], 2u);
  unsetenv("QUILL_TERNARY_MODE");
}

TEST(QuantBackend, TernaryExactMatchesDequantizedLinear) { check(DType::kTQ2_0_G128, "exact", 1e-5); }
TEST(QuantBackend, TernaryDefaultIsA8) { check(DType::kTQ2_0_G128, nullptr, 2e-2); }
TEST(QuantBackend, TernaryA8WithinBound) { check(DType::kTQ2_0_G128, "a8", 2e-2); }
TEST(QuantBackend, Q8ExactMatchesDequantizedLinear) { check(DType::kQ8_0, nullptr, 1e-5); }

// Ternary defaults to int8 activations (what ternary models are trained with) where an int8
// kernel exists, every other type to exact; QUILL_TERNARY_MODE=a8|exact overrides both, anything else keeps the defaults.
TEST(QuantBackend, ModeDefaultsAndOverride) {
  for (const char* env : {static_cast<const char*>(nullptr), "fast"}) {
    std::optional<test::ScopedEnv> set;
    if (env) set.emplace("QUILL_TERNARY_MODE", env);
    if (!env) unsetenv("QUILL_TERNARY_MODE");
    const bool a8_kernel =
        cpu::kernel_table().quant.plan[size_t(DType::kTQ2_0_G128)][size_t(quant::QuantMode::kA8)].kernels;
    EXPECT_EQ(quant::quant_mode_for(DType::kTQ2_0_G128), a8_kernel ? quant::QuantMode::kA8 : quant::QuantMode::kExact);
    EXPECT_EQ(quant::quant_mode_for(DType::kQ8_0), quant::QuantMode::kExact);
    EXPECT_EQ(quant::quant_mode_for(DType::kF16), quant::QuantMode::kExact);
  }
  {
    const test::ScopedEnv set("QUILL_TERNARY_MODE", "exact");
    EXPECT_EQ(quant::quant_mode_for(DType::kTQ2_0_G128), quant::QuantMode::kExact);
  }
  const test::ScopedEnv set("QUILL_TERNARY_MODE", "a8");
  EXPECT_EQ(quant::quant_mode_for(DType::kQ8_0), quant::QuantMode::kA8);
}

TEST(QuantBackend, ScratchTooSmallIsAnError) {
  ThreadPool pool(1);
  CpuBackend cpu(pool);
  std::vector<float> wf(size_t(8 * 128), 0.1f);
  auto q = quant::quantize_tensor(Tensor(wf.data(), DType::kF32, Shape{8, 128}), DType::kTQ2_0_G128);
  ASSERT_TRUE(q.is_ok());
  std::vector<float> x(128), y(8), scratch(4);
  OpScratch s;
  s.linear = scratch.data();
  s.linear_floats = scratch.size();
  EXPECT_EQ(cpu.linear(x.data(), 1, *q, nullptr, y.data(), s).code(), ErrorCode::kInternal);
}

}  // namespace
}  // namespace quill
