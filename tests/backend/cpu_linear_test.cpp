// linear against a double-accumulation reference for f32 / f16 / bf16 weights, every ISA level,
// the small-M direct kernel and the panelled GEMM path (including several panels), with outputs
// and scratch poisoned with NaN beforehand.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "backend/cpu/gemm.h"
#include "backend/cpu/ops.h"
#include "backend/op_test_util.h"
#include "quill/dtype.h"
#include "quill/tensor.h"

namespace quill {
namespace {

using test::nan_filled;
using test::random_normal;
using testing_ops::IsaScope;
using testing_ops::testable_isas;

struct Weight {
  Tensor tensor;
  std::vector<float> decoded;  // what the kernel must use: the stored values as f32
};

Weight make_weight(DType dtype, int64_t N, int64_t K, uint32_t seed) {
  const auto src = random_normal(size_t(N * K), seed, 0.5f, 0.0f);
  Weight w{Tensor::empty(dtype, Shape{N, K}), std::vector<float>(src.size())};
  for (size_t i = 0; i < src.size(); ++i) {
    if (dtype == DType::kF32) {
      w.tensor.data_as<float>()[i] = src[i];
      w.decoded[i] = src[i];
    } else if (dtype == DType::kF16) {
      const uint16_t h = f32_to_f16(src[i]);
      w.tensor.data_as<uint16_t>()[i] = h;
      w.decoded[i] = f16_to_f32(h);
    } else {
      const uint16_t h = f32_to_bf16(src[i]);
      w.tensor.data_as<uint16_t>()[i] = h;
      w.decoded[i] = bf16_to_f32(h);
    }
  }
  return w;
}

// y = x W^T + b in double; also returns sum |x w| per output, the scale of the rounding error.
void reference(const std::vector<float>& x, int64_t M, const std::vector<float>& W, int64_t N, int64_t K,
               const float* bias, std::vector<double>& y, std::vector<double>& mag) {
  y.assign(size_t(M * N), 0.0);
  mag.assign(size_t(M * N), 0.0);
  for (int64_t m = 0; m < M; ++m)
    for (int64_t n = 0; n < N; ++n) {
      double s = bias ? bias[n] : 0.0, a = bias ? std::fabs(bias[n]) : 0.0;
      for (int64_t k = 0; k < K; ++k) {
        const double p = double(x[size_t(m * K + k)]) * double(W[size_t(n * K + k)]);
        s += p;
        a += std::fabs(p);
      }
      y[size_t(m * N + n)] = s;
      mag[size_t(m * N + n)] = a;
    }
}

void expect_close(const std::vector<float>& y, const std::vector<double>& ref, const std::vector<double>& mag,
                  const char* what) {
  ASSERT_EQ(y.size(), ref.size());
  for (size_t i = 0; i < y.size(); ++i) {
    const double tol = 1e-5 * mag[i] + 1e-6;
    ASSERT_TRUE(std::isfinite(y[i])) << what << " index " << i;
    ASSERT_NEAR(y[i], ref[i], tol) << what << " index " << i;
  }
}

struct Case {
  int64_t M, N, K;
};

TEST(CpuLinear, MatchesDoubleReferenceForEveryWeightTypeAndIsa) {
  ThreadPool pool(3);
  const Case cases[] = {{1, 1, 1},     {1, 7, 33},     {3, 40, 64}, {4, 65, 129},    {5, 33, 7},
                        {17, 129, 72}, {33, 300, 257}, {70, 19, 1}, {16, 300, 4096}, {1, 300, 4096}};
  for (DType dtype : {DType::kF32, DType::kF16, DType::kBF16}) {
    for (const Case& c : cases) {
      const Weight w = make_weight(dtype, c.N, c.K, uint32_t(c.M * 131 + c.N * 7 + c.K));
      const auto x = random_normal(size_t(c.M * c.K), 11, 1.0f, 0.1f);
      const auto bias = random_normal(size_t(c.N), 12);
      for (bool with_bias : {false, true}) {
        std::vector<double> ref, mag;
        reference(x, c.M, w.decoded, c.N, c.K, with_bias ? bias.data() : nullptr, ref, mag);
        for (CpuIsa isa : testable_isas()) {
          IsaScope scope(isa);
          SCOPED_TRACE(testing::Message() << cpu_isa_name(isa) << " " << dtype_name(dtype) << " M=" << c.M
                                          << " N=" << c.N << " K=" << c.K << " bias=" << with_bias);
          auto y = nan_filled(size_t(c.M * c.N));
          auto scratch = nan_filled(cpu::linear_scratch_floats(w.tensor, pool));
          if (dtype == DType::kF32) {
            EXPECT_EQ(scratch.size(), 0u);
          }
          cpu::linear(x.data(), c.M, w.tensor, with_bias ? bias.data() : nullptr, y.data(), scratch.data(), pool);
          expect_close(y, ref, mag, "linear");
        }
      }
    }
  }
}

TEST(CpuLinear, SeveralWeightPanels) {
  // K = 4096: 16 MB panels hold 1024 rows, so N = 1030 takes two sgemm calls.
  ThreadPool pool(2);
  const int64_t M = 17, N = 1030, K = 4096;
  for (DType dtype : {DType::kF16, DType::kBF16}) {
    const Weight w = make_weight(dtype, N, K, 21);
    const auto x = random_normal(size_t(M * K), 22);
    const auto bias = random_normal(size_t(N), 23);
    ASSERT_LT(cpu::linear_scratch_floats(w.tensor, pool), size_t(N * K));
    std::vector<double> ref, mag;
    reference(x, M, w.decoded, N, K, bias.data(), ref, mag);
    for (CpuIsa isa : testable_isas()) {
      IsaScope scope(isa);
      SCOPED_TRACE(testing::Message() << cpu_isa_name(isa) << " " << dtype_name(dtype));
      auto y = nan_filled(size_t(M * N));
      auto scratch = nan_filled(cpu::linear_scratch_floats(w.tensor, pool));
      cpu::linear(x.data(), M, w.tensor, bias.data(), y.data(), scratch.data(), pool);
      expect_close(y, ref, mag, "linear");
    }
  }
}

TEST(CpuLinear, ScratchIsOnePanelNotTheWholeWeight) {
  ThreadPool pool(2);
  const Tensor big(nullptr, DType::kBF16, Shape{9216, 6144});  // only the shape is read
  const size_t floats = cpu::linear_scratch_floats(big, pool);
  EXPECT_GT(floats, 0u);
  EXPECT_LT(floats, size_t(9216) * 6144 / 4);
  EXPECT_EQ(floats % 6144, 0u);
}

TEST(CpuLinear, SameResultWithOneOrManyThreads) {
  ThreadPool one(1), three(3);
  const int64_t M = 37, N = 70, K = 300;
  for (DType dtype : {DType::kF32, DType::kBF16}) {
    const Weight w = make_weight(dtype, N, K, 5);
    const auto x = random_normal(size_t(M * K), 6);
    auto y1 = nan_filled(size_t(M * N)), y3 = nan_filled(size_t(M * N));
    auto s1 = nan_filled(cpu::linear_scratch_floats(w.tensor, one));
    auto s3 = nan_filled(cpu::linear_scratch_floats(w.tensor, three));
    cpu::linear(x.data(), M, w.tensor, nullptr, y1.data(), s1.data(), one);
    cpu::linear(x.data(), M, w.tensor, nullptr, y3.data(), s3.data(), three);
    std::vector<double> ref, mag;
    reference(x, M, w.decoded, N, K, nullptr, ref, mag);
    expect_close(y1, ref, mag, "1 thread");
    expect_close(y3, ref, mag, "3 threads");
  }
}

TEST(CpuGemm, PortableKernelMatchesReferenceAndAccumulates) {
  ThreadPool pool(3);
  for (const Case& c : {Case{1, 1, 1}, Case{5, 33, 300}, Case{13, 65, 7}, Case{4, 32, 256}, Case{9, 1, 513}}) {
    SCOPED_TRACE(testing::Message() << "M=" << c.M << " N=" << c.N << " K=" << c.K);
    const auto A = random_normal(size_t(c.M * c.K), 1);
    const auto B = random_normal(size_t(c.N * c.K), 2);
    const auto C0 = random_normal(size_t(c.M * c.N), 3);
    std::vector<double> ref, mag;
    reference(A, c.M, B, c.N, c.K, nullptr, ref, mag);
    auto C = nan_filled(size_t(c.M * c.N));
    cpu::sgemm_nt_portable(c.M, c.N, c.K, A.data(), c.K, B.data(), c.K, C.data(), c.N, false, pool);
    expect_close(C, ref, mag, "portable");
    C = C0;
    cpu::sgemm_nt_portable(c.M, c.N, c.K, A.data(), c.K, B.data(), c.K, C.data(), c.N, true, pool);
    for (size_t i = 0; i < ref.size(); ++i) ref[i] += C0[i];
    expect_close(C, ref, mag, "portable accumulate");
    C = nan_filled(size_t(c.M * c.N));
    cpu::sgemm_nt(c.M, c.N, c.K, A.data(), c.K, B.data(), c.K, C.data(), c.N, false, pool);
    for (size_t i = 0; i < ref.size(); ++i) ref[i] -= C0[i];
    expect_close(C, ref, mag, "sgemm_nt");
  }
}

}  // namespace
}  // namespace quill
