// Each CUDA op against the CPU op on random inputs of odd sizes: cosine >= 0.999 and a relative
// L2 bound per dtype (cuda_test_util.h). Outputs start as NaN so an unwritten element fails.
#include <gtest/gtest.h>

#include <limits>

#include "cuda/cuda_test_util.h"
#include "cuda/tq2_reference.h"

namespace quill {
namespace {

using test::random_normal;

std::vector<float> nans(int64_t n) { return std::vector<float>(size_t(n), std::numeric_limits<float>::quiet_NaN()); }

struct LinearCase {
  int64_t M, K, N;
  DType wtype;
  bool bias;
};

class CudaLinear : public ::testing::TestWithParam<LinearCase> {};

TEST_P(CudaLinear, MatchesCpu) {
  QUILL_REQUIRE_CUDA();
  const LinearCase c = GetParam();
  ThreadPool pool(2);
  CpuBackend cpu(pool);
  auto& gpu = test::shared_cuda_backend();
  const auto x = random_normal(size_t(c.M * c.K), 11);
  const auto w32 = random_normal(size_t(c.N * c.K), 12, 0.05f);
  const auto bias = random_normal(size_t(c.N), 13);
  std::vector<uint16_t> w16;
  Tensor W;
  if (c.wtype == DType::kF32) {
    W = Tensor(const_cast<float*>(w32.data()), DType::kF32, {c.N, c.K});
  } else {
    w16 = c.wtype == DType::kBF16 ? test::to_bf16(w32) : test::to_f16(w32);
    W = Tensor(w16.data(), c.wtype, {c.N, c.K});
  }
  auto scratch = test::cpu_scratch(&W, 0, 0, pool);
  auto want = nans(c.M * c.N), got = nans(c.M * c.N);
  const float* b = c.bias ? bias.data() : nullptr;
  ASSERT_TRUE(cpu.linear(x.data(), c.M, W, b, want.data(), scratch.get()).is_ok());
  ASSERT_TRUE(gpu.supports(OpKind::kLinear, &W));
  const Status st = gpu.linear(x.data(), c.M, W, b, got.data(), {});
  ASSERT_TRUE(st.is_ok()) << st.to_string();
  EXPECT_GPU_MATCHES_CPU(got, want, test::kBf16LinearBound);
}

INSTANTIATE_TEST_SUITE_P(Shapes, CudaLinear,
                         ::testing::Values(LinearCase{37, 72, 50, DType::kBF16, true},
                                           LinearCase{1, 256, 64, DType::kBF16, false},
                                           LinearCase{300, 1536, 1536, DType::kBF16, true},
                                           LinearCase{37, 72, 50, DType::kF32, true},
                                           LinearCase{64, 384, 200, DType::kF16, true},
                                           // K * 2 bytes not a multiple of 16: cuBLASLt's less aligned kernels
                                           LinearCase{19, 69, 33, DType::kBF16, true}),
                         [](const auto& info) {
                           const LinearCase& c = info.param;
                           return str_cat(dtype_name(c.wtype), "_M", c.M, "_K", c.K, "_N", c.N, c.bias ? "_bias" : "");
                         });

struct TernaryCase {
  int64_t M, K, N;
};
class CudaTernary : public ::testing::TestWithParam<TernaryCase> {};

// The CPU has no ternary linear yet; the reference is the CPU f32 linear on the dequantised weight
// (exact: codes are {-1, 0, 1} times an f16 scale, all representable in f32).
TEST_P(CudaTernary, MatchesCpuOnDequantisedWeights) {
  QUILL_REQUIRE_CUDA();
  const TernaryCase c = GetParam();
  ThreadPool pool(2);
  CpuBackend cpu(pool);
  auto& gpu = test::shared_cuda_backend();
  auto blocks = test::random_tq2(c.N, c.K, 21);
  auto wdq = test::dequant_tq2(blocks, c.N, c.K);
  const Tensor Wq(blocks.data(), DType::kTQ2_0_G128, {c.N, c.K});
  const Tensor Wf(wdq.data(), DType::kF32, {c.N, c.K});
  const auto x = random_normal(size_t(c.M * c.K), 22);
  const auto bias = random_normal(size_t(c.N), 23);
  auto scratch = test::cpu_scratch(&Wf, 0, 0, pool);
  auto want = nans(c.M * c.N), got = nans(c.M * c.N);
  ASSERT_TRUE(cpu.linear(x.data(), c.M, Wf, bias.data(), want.data(), scratch.get()).is_ok());
  ASSERT_TRUE(gpu.supports(OpKind::kLinear, &Wq));
  const Status st = gpu.linear(x.data(), c.M, Wq, bias.data(), got.data(), {});
  ASSERT_TRUE(st.is_ok()) << st.to_string();
  EXPECT_GPU_MATCHES_CPU(got, want, test::kBf16LinearBound);
}

INSTANTIATE_TEST_SUITE_P(Shapes, CudaTernary,
                         ::testing::Values(TernaryCase{1, 128, 8}, TernaryCase{37, 384, 200},
                                           TernaryCase{300, 1536, 1536}, TernaryCase{129, 256, 131}),
                         [](const auto& info) {
                           const TernaryCase& c = info.param;
                           return str_cat("M", c.M, "_K", c.K, "_N", c.N);
                         });

struct AttentionCase {
  int64_t B, Sq, Skv, H, Dh;
};
class CudaAttention : public ::testing::TestWithParam<AttentionCase> {};

TEST_P(CudaAttention, MatchesCpu) {
  QUILL_REQUIRE_CUDA();
  const AttentionCase c = GetParam();
  ThreadPool pool(2);
  CpuBackend cpu(pool);
  auto& gpu = test::shared_cuda_backend();
  const auto q = random_normal(size_t(c.B * c.Sq * c.H * c.Dh), 31);
  const auto k = random_normal(size_t(c.B * c.Skv * c.H * c.Dh), 32);
  const auto v = random_normal(size_t(c.B * c.Skv * c.H * c.Dh), 33);
  const float scale = 1.0f / std::sqrt(float(c.Dh));
  auto scratch = test::cpu_scratch(nullptr, c.Skv, c.Dh, pool);
  auto want = nans(int64_t(q.size())), got = nans(int64_t(q.size()));
  ASSERT_TRUE(
      cpu.attention(q.data(), k.data(), v.data(), want.data(), c.B, c.Sq, c.Skv, c.H, c.Dh, scale, scratch.get())
          .is_ok());
  const Status st = gpu.attention(q.data(), k.data(), v.data(), got.data(), c.B, c.Sq, c.Skv, c.H, c.Dh, scale, {});
  ASSERT_TRUE(st.is_ok()) << st.to_string();
  const bool tensor_cores = c.Dh == 64 || c.Dh == 128;
  EXPECT_GPU_MATCHES_CPU(got, want, tensor_cores ? test::kBf16AttentionBound : test::kF32Bound);
}

INSTANTIATE_TEST_SUITE_P(Shapes, CudaAttention,
                         ::testing::Values(AttentionCase{2, 100, 333, 3, 64}, AttentionCase{2, 100, 333, 3, 128},
                                           AttentionCase{1, 1024, 1024, 2, 64}, AttentionCase{1, 64, 1, 1, 128},
                                           AttentionCase{1, 1, 70, 2, 64},
                                           // other head dims: the f32 kernel
                                           AttentionCase{2, 37, 41, 4, 8}, AttentionCase{1, 50, 77, 2, 40},
                                           AttentionCase{1, 20, 30, 1, 256}),
                         [](const auto& info) {
                           const AttentionCase& c = info.param;
                           return str_cat("B", c.B, "_Sq", c.Sq, "_Skv", c.Skv, "_H", c.H, "_Dh", c.Dh);
                         });

struct NormCase {
  int64_t B, S, D;
};
class CudaNorms : public ::testing::TestWithParam<NormCase> {};

TEST_P(CudaNorms, MatchCpu) {
  QUILL_REQUIRE_CUDA();
  const NormCase c = GetParam();
  const int64_t rows = c.B * c.S, n = rows * c.D;
  ThreadPool pool(2);
  CpuBackend cpu(pool);
  auto& gpu = test::shared_cuda_backend();
  // Rows with a large mean next to their spread: the case the two-part mean is for.
  auto x = random_normal(size_t(n), 41, 2.0f);
  for (auto& e : x) e += 30.0f;
  const auto w = random_normal(size_t(c.D), 42), b = random_normal(size_t(c.D), 43);
  const auto mod = random_normal(size_t(c.B * 6 * c.D), 44, 0.5f);
  const auto other = random_normal(size_t(n), 45);
  auto want = nans(n), got = nans(n);

  SCOPED_TRACE("layer_norm with affine");
  ASSERT_TRUE(cpu.layer_norm(x.data(), want.data(), rows, c.D, 1e-6f, w.data(), b.data()).is_ok());
  ASSERT_TRUE(gpu.layer_norm(x.data(), got.data(), rows, c.D, 1e-6f, w.data(), b.data()).is_ok());
  EXPECT_GPU_MATCHES_CPU(got, want, test::kF32Bound);

  SCOPED_TRACE("layer_norm without affine");
  ASSERT_TRUE(cpu.layer_norm(x.data(), want.data(), rows, c.D, 1e-5f, nullptr, nullptr).is_ok());
  ASSERT_TRUE(gpu.layer_norm(x.data(), got.data(), rows, c.D, 1e-5f, nullptr, nullptr).is_ok());
  EXPECT_GPU_MATCHES_CPU(got, want, test::kF32Bound);

  SCOPED_TRACE("layer_norm_modulate (shift, scale chunks of one modulation vector)");
  const float* shift = mod.data() + 3 * c.D;
  const float* scale = mod.data() + 4 * c.D;
  ASSERT_TRUE(cpu.layer_norm_modulate(x.data(), want.data(), c.B, c.S, c.D, 1e-6f, shift, scale, 6 * c.D).is_ok());
  ASSERT_TRUE(gpu.layer_norm_modulate(x.data(), got.data(), c.B, c.S, c.D, 1e-6f, shift, scale, 6 * c.D).is_ok());
  EXPECT_GPU_MATCHES_CPU(got, want, test::kF32Bound);

  SCOPED_TRACE("rms_norm, weighted and in place");
  ASSERT_TRUE(cpu.rms_norm(x.data(), want.data(), rows, c.D, 1e-6f, w.data()).is_ok());
  ASSERT_TRUE(gpu.rms_norm(x.data(), got.data(), rows, c.D, 1e-6f, w.data()).is_ok());
  EXPECT_GPU_MATCHES_CPU(got, want, test::kF32Bound);
  want = x;
  got = x;
  ASSERT_TRUE(cpu.rms_norm(want.data(), want.data(), rows, c.D, 1e-6f, nullptr).is_ok());
  ASSERT_TRUE(gpu.rms_norm(got.data(), got.data(), rows, c.D, 1e-6f, nullptr).is_ok());
  EXPECT_GPU_MATCHES_CPU(got, want, test::kF32Bound);

  SCOPED_TRACE("gated_residual");
  want = x;
  got = x;
  ASSERT_TRUE(cpu.gated_residual(want.data(), other.data(), mod.data() + 2 * c.D, c.B, c.S, c.D, 6 * c.D).is_ok());
  ASSERT_TRUE(gpu.gated_residual(got.data(), other.data(), mod.data() + 2 * c.D, c.B, c.S, c.D, 6 * c.D).is_ok());
  EXPECT_GPU_MATCHES_CPU(got, want, test::kF32Bound);
}

INSTANTIATE_TEST_SUITE_P(Shapes, CudaNorms,
                         ::testing::Values(NormCase{2, 25, 24}, NormCase{2, 77, 1536}, NormCase{1, 3, 3072},
                                           NormCase{3, 5, 64}),
                         [](const auto& info) {
                           const NormCase& c = info.param;
                           return str_cat("B", c.B, "_S", c.S, "_D", c.D);
                         });

TEST(CudaActivations, MatchCpu) {
  QUILL_REQUIRE_CUDA();
  ThreadPool pool(2);
  CpuBackend cpu(pool);
  auto& gpu = test::shared_cuda_backend();
  auto x = random_normal(100003, 51, 4.0f);  // odd length; |x| up to ~20: both tails of exp
  x[0] = 0.0f;
  x[1] = -30.0f;
  x[2] = 30.0f;
  for (int which = 0; which < 2; ++which) {
    SCOPED_TRACE(which ? "silu" : "gelu_tanh");
    auto want = x, got = x;
    ASSERT_TRUE((which ? cpu.silu(want.data(), int64_t(want.size())) : cpu.gelu_tanh(want.data(), int64_t(want.size())))
                    .is_ok());
    const Status st =
        which ? gpu.silu(got.data(), int64_t(got.size())) : gpu.gelu_tanh(got.data(), int64_t(got.size()));
    ASSERT_TRUE(st.is_ok()) << st.to_string();
    EXPECT_GPU_MATCHES_CPU(got, want, test::kF32Bound);
  }
}

}  // namespace
}  // namespace quill
