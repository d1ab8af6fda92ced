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
#include "backend/cpu/ops.h"
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

// The linear scratch of an op call, over all of `buffer`.
OpScratch linear_scratch(std::vector<float>& buffer) {
  OpScratch s;
  s.linear = buffer.data();
  s.linear_floats = buffer.size();
  return s;
}

void check(DType dt, const char* mode_env, double bound) {
  const test::ScopedEnv mode("QUILL_TERNARY_MODE", mode_env ? mode_env : "");
  ThreadPool pool(2);
  CpuBackend cpu(pool);
  Dispatcher disp(&cpu);
  const int64_t M = 600, K = 256, N = 48;  // M above the exact kernel's row pass (kQuantMChunk / 3)
  std::vector<float> wf = random_normal(size_t(N * K), 4, 0.05f, 0.0f);
  auto q = quant::quantize_tensor(Tensor(wf.data(), DType::kF32, Shape{N, K}), dt);
  ASSERT_TRUE(q.is_ok());
  auto deq = quant::dequantize_tensor(*q);
  ASSERT_TRUE(deq.is_ok());
  const size_t floats = std::max(op_linear_scratch_floats(*q, pool), op_linear_scratch_floats(*deq, pool));
  std::vector<float> scratch(floats);
  disp.set_scratch(linear_scratch(scratch));
  const std::vector<float> x = random_normal(size_t(M * K), 5), bias = random_normal(size_t(N), 6);
  std::vector<float> y = nan_filled(size_t(M * N)), ref = nan_filled(size_t(M * N));
  ASSERT_TRUE(disp.linear(x.data(), M, *q, bias.data(), y.data()).is_ok());
  ASSERT_TRUE(disp.linear(x.data(), M, *deq, bias.data(), ref.data()).is_ok());
  EXPECT_LE(rel_err(y, ref), bound) << dtype_name(dt) << " " << (mode_env ? mode_env : "exact");
  EXPECT_EQ(disp.stats().runs[size_t(OpKind::kLinear)][0], 2u);
}

TEST(QuantBackend, TernaryExactMatchesDequantizedLinear) { check(DType::kTQ2_0_G128, "exact", 1e-5); }
TEST(QuantBackend, TernaryDefaultIsA8) { check(DType::kTQ2_0_G128, nullptr, 2e-2); }
TEST(QuantBackend, TernaryA8WithinBound) { check(DType::kTQ2_0_G128, "a8", 2e-2); }
TEST(QuantBackend, Q8ExactMatchesDequantizedLinear) { check(DType::kQ8_0, nullptr, 1e-5); }

// Ternary defaults to int8 activations (what ternary models are trained with) where an int8
// kernel exists (on AVX-512 hardware it always does), every other type to exact;
// QUILL_TERNARY_MODE=a8|exact overrides both, anything else keeps the defaults.
TEST(QuantBackend, ModeDefaultsAndOverride) {
  const bool avx512 = cpu::kernel_table().isa == CpuIsa::kAvx512;
  for (const char* env : {"", "fast"}) {
    const test::ScopedEnv set("QUILL_TERNARY_MODE", env);
    if (avx512) {
      EXPECT_EQ(quant::quant_mode_for(DType::kTQ2_0_G128), quant::QuantMode::kA8) << env;
    }
    EXPECT_EQ(quant::quant_mode_for(DType::kQ8_0), quant::QuantMode::kExact);
    EXPECT_EQ(quant::quant_mode_for(DType::kF16), quant::QuantMode::kExact);
  }
  {
    const testing_ops::IsaScope scalar(cpu::kernel_table_for(CpuIsa::kScalar));  // no int8 kernel: exact
    const test::ScopedEnv unset("QUILL_TERNARY_MODE", "");
    EXPECT_EQ(quant::quant_mode_for(DType::kTQ2_0_G128), quant::QuantMode::kExact);
  }
  {
    const test::ScopedEnv set("QUILL_TERNARY_MODE", "exact");
    EXPECT_EQ(quant::quant_mode_for(DType::kTQ2_0_G128), quant::QuantMode::kExact);
  }
  // An explicit a8 is honoured where an A8 kernel runs the type, and falls back to exact where
  // only the (5-50x slower) scalar reference would.
  const test::ScopedEnv set("QUILL_TERNARY_MODE", "a8");
  for (DType d : {DType::kTQ2_0_G128, DType::kQ8_0, DType::kBF16}) {
    const bool kernel = quant::has_a8_kernel(d);
    EXPECT_EQ(quant::quant_mode_for(d), kernel ? quant::QuantMode::kA8 : quant::QuantMode::kExact) << dtype_name(d);
  }
  if (avx512) {
    EXPECT_EQ(quant::quant_mode_for(DType::kQ8_0), quant::QuantMode::kA8);
  }
  const testing_ops::IsaScope scalar(cpu::kernel_table_for(CpuIsa::kScalar));
  EXPECT_EQ(quant::quant_mode_for(DType::kTQ2_0_G128), quant::QuantMode::kExact);
}

// The exact kernel over several row passes (its pass is kQuantMChunk / 3 rows) with scratch sized
// for one chunk.
TEST(QuantBackend, TernaryExactOverSeveralPasses) {
  const test::ScopedEnv exact("QUILL_TERNARY_MODE", "exact");
  ThreadPool pool(2);
  const int64_t M = quant::kQuantMChunk / 2 + 37, K = 384, N = 40;
  std::vector<float> wf = random_normal(size_t(N * K), 7, 0.05f, 0.0f);
  auto q = quant::quantize_tensor(Tensor(wf.data(), DType::kF32, Shape{N, K}), DType::kTQ2_0_G128);
  ASSERT_TRUE(q.is_ok());
  auto deq = quant::dequantize_tensor(*q);
  const std::vector<float> x = random_normal(size_t(M * K), 8), bias = random_normal(size_t(N), 9);
  std::vector<uint8_t> scratch(quant::quant_linear_scratch_bytes(quant::kQuantMChunk, *q, quant::QuantMode::kExact, pool));
  std::vector<float> y = nan_filled(size_t(M * N)), ref(size_t(M * N));
  ASSERT_TRUE(quant::quant_linear(x.data(), M, *q, nullptr, bias.data(), y.data(), scratch.data(),
                                  quant::QuantMode::kExact, pool).is_ok());
  const float* d = deq->data_as<float>();
  for (int64_t m = 0; m < M; ++m)
    for (int64_t n = 0; n < N; ++n) {
      double acc = bias[size_t(n)];
      for (int64_t k = 0; k < K; ++k) acc += double(x[size_t(m * K + k)]) * d[n * K + k];
      ref[size_t(m * N + n)] = float(acc);
    }
  EXPECT_LE(rel_err(y, ref), 2e-6);
}

// bf16 weights take bf16 activations under QUILL_TERNARY_MODE=a8 only where quant_linear has a
// kernel for them (AVX-512 / oneDNN); elsewhere (AVX2, scalar) quant_mode_for keeps them exact and
// they stay on f32 panels + sgemm, bit for bit the exact route. Scratch sized with the mode unset serves either route.
TEST(QuantBackend, Bf16ActivationsOnlyWhereAKernelRunsThem) {
  ThreadPool pool(2);
  CpuBackend cpu(pool);
  Dispatcher disp(&cpu);
  const int64_t M = 300, K = 256, N = 40;
  std::vector<float> wf = random_normal(size_t(N * K), 10, 0.05f, 0.0f);
  auto w = quant::quantize_tensor(Tensor(wf.data(), DType::kF32, Shape{N, K}), DType::kBF16);
  ASSERT_TRUE(w.is_ok());
  auto deq = quant::dequantize_tensor(*w);
  ASSERT_TRUE(deq.is_ok());
  const std::vector<float> x = random_normal(size_t(M * K), 11), bias = random_normal(size_t(N), 12);
  for (CpuIsa isa : testing_ops::testable_isas()) {
    SCOPED_TRACE(cpu_isa_name(isa));
    const testing_ops::IsaScope level(isa);
    size_t floats = 0;
    {
      const test::ScopedEnv unset("QUILL_TERNARY_MODE", "");
      floats = op_linear_scratch_floats(*w, pool);
    }
    std::vector<float> scratch(floats);
    disp.set_scratch(linear_scratch(scratch));
    std::vector<float> exact = nan_filled(size_t(M * N)), a8 = nan_filled(size_t(M * N)),
                       f32 = nan_filled(size_t(M * N));
    ASSERT_TRUE(disp.linear(x.data(), M, *deq, bias.data(), f32.data()).is_ok());
    {
      const test::ScopedEnv mode("QUILL_TERNARY_MODE", "exact");
      ASSERT_TRUE(disp.linear(x.data(), M, *w, bias.data(), exact.data()).is_ok());
    }
    const test::ScopedEnv mode("QUILL_TERNARY_MODE", "a8");
    ASSERT_TRUE(disp.linear(x.data(), M, *w, bias.data(), a8.data()).is_ok());
    EXPECT_LE(rel_err(exact, f32), 1e-5);
    EXPECT_LE(rel_err(a8, f32), 1e-2);  // activations rounded to bf16
    if (quant::has_a8_kernel(DType::kBF16)) {
      std::vector<uint8_t> qs(quant::quant_linear_scratch_bytes(M, *w, quant::QuantMode::kA8, pool));
      std::vector<float> ref = nan_filled(size_t(M * N));
      ASSERT_TRUE(quant::quant_linear(x.data(), M, *w, nullptr, bias.data(), ref.data(), qs.data(),
                                      quant::QuantMode::kA8, pool).is_ok());
      EXPECT_EQ(a8, ref);
      EXPECT_NE(a8, exact);
    } else {
      EXPECT_EQ(a8, exact);
    }
  }
}

// f16 weights run quant_linear's fused panel kernel where the kernel table prefers it (AVX-512,
// where it beats f32 panels + sgemm), bit for bit that kernel's output; elsewhere the f32 panel
// route, bit for bit cpu::linear. Either way within rounding of the dequantized weights in f32.
TEST(QuantBackend, F16TakesTheFusedKernelWhereTheTableSaysSo) {
  ThreadPool pool(2);
  CpuBackend cpu(pool);
  Dispatcher disp(&cpu);
  const int64_t M = 300, K = 200, N = 40;  // K not a multiple of the decoder's 16 or 128
  std::vector<float> wf = random_normal(size_t(N * K), 13, 0.05f, 0.0f);
  auto w = quant::quantize_tensor(Tensor(wf.data(), DType::kF32, Shape{N, K}), DType::kF16);
  ASSERT_TRUE(w.is_ok());
  auto deq = quant::dequantize_tensor(*w);
  ASSERT_TRUE(deq.is_ok());
  const std::vector<float> x = random_normal(size_t(M * K), 14), bias = random_normal(size_t(N), 15);
  for (CpuIsa isa : testing_ops::testable_isas()) {
    SCOPED_TRACE(cpu_isa_name(isa));
    const testing_ops::IsaScope level(isa);
    const bool fused = cpu::kernel_table().quant.f16_fused;
    EXPECT_EQ(fused, isa == CpuIsa::kAvx512);
    const size_t floats = op_linear_scratch_floats(*w, pool);
    std::vector<float> scratch(floats);
    disp.set_scratch(linear_scratch(scratch));
    std::vector<float> got = nan_filled(size_t(M * N)), ref = nan_filled(size_t(M * N)),
                       f32 = nan_filled(size_t(M * N));
    ASSERT_TRUE(disp.linear(x.data(), M, *w, bias.data(), got.data()).is_ok());
    ASSERT_TRUE(disp.linear(x.data(), M, *deq, bias.data(), f32.data()).is_ok());
    if (fused) {
      std::vector<uint8_t> qs(quant::quant_linear_scratch_bytes(M, *w, quant::QuantMode::kExact, pool));
      ASSERT_TRUE(quant::quant_linear(x.data(), M, *w, nullptr, bias.data(), ref.data(), qs.data(),
                                      quant::QuantMode::kExact, pool).is_ok());
    } else {
      std::vector<float> ls(cpu::linear_scratch_floats(*w, pool));
      cpu::linear(x.data(), M, *w, bias.data(), ref.data(), ls.data(), pool);
    }
    EXPECT_EQ(got, ref);
    EXPECT_LE(rel_err(got, f32), 1e-5);
  }
}

TEST(QuantBackend, ScratchTooSmallIsAnError) {
  ThreadPool pool(1);
  CpuBackend cpu(pool);
  std::vector<float> wf(size_t(8 * 128), 0.1f);
  auto q = quant::quantize_tensor(Tensor(wf.data(), DType::kF32, Shape{8, 128}), DType::kTQ2_0_G128);
  ASSERT_TRUE(q.is_ok());
  std::vector<float> x(128), y(8), scratch(4);
  EXPECT_EQ(cpu.linear(x.data(), 1, *q, nullptr, y.data(), linear_scratch(scratch)).code(), ErrorCode::kInternal);
}

}  // namespace
}  // namespace quill
