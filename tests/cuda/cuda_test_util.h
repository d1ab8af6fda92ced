// Shared pieces of the CUDA backend tests: skip without a device, one backend per test binary,
// the CPU reference ops with their scratch, and the GPU-vs-CPU comparison with a readable report.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "backend/cpu/cpu_backend.h"
#include "backend/cuda/cuda_backend.h"
#include "runtime/dispatcher.h"
#include "support/test_util.h"

// Every test that needs a GPU starts with this.
#define QUILL_REQUIRE_CUDA()                                                               \
  do {                                                                                     \
    if (::quill::cuda::CudaBackend::device_count() == 0) GTEST_SKIP() << "no CUDA device"; \
  } while (0)

namespace quill::test {

// One backend for the whole binary (creating a context per test costs ~100 ms on a GPU).
inline cuda::CudaBackend& shared_cuda_backend() {
  static std::unique_ptr<cuda::CudaBackend> backend = [] {
    auto r = cuda::CudaBackend::create();
    if (!r.is_ok()) ADD_FAILURE() << "a device exists but the backend failed: " << r.status().to_string();
    return r.is_ok() ? std::move(r).value() : nullptr;
  }();
  return *backend;
}

// CPU scratch for a linear / attention, as a plan would size it.
struct CpuScratch {
  std::vector<float> linear, attention;
  OpScratch get() { return {linear.data(), linear.size(), attention.data(), attention.size()}; }
};
inline CpuScratch cpu_scratch(const Tensor* W, int64_t Skv, int64_t Dh, const ThreadPool& pool) {
  CpuScratch s;
  s.linear.resize((W ? op_linear_scratch_floats(*W, pool) : 0) + 1);
  s.attention.resize((Skv > 0 ? op_attention_scratch_floats(Skv, Dh, pool) : 0) + 1);
  return s;
}

struct Agreement {
  double cosine, rel_l2, max_abs;
  size_t worst, nonfinite;
  std::string report() const {
    return str_cat("cosine ", cosine, ", rel_l2 ", rel_l2, ", max |diff| ", max_abs, " at ", worst, ", non-finite ",
                   nonfinite);
  }
};

inline Agreement agreement(const std::vector<float>& gpu, const std::vector<float>& cpu) {
  Agreement a{cosine(gpu, cpu), rel_l2(gpu, cpu), 0.0, 0, 0};
  for (size_t i = 0; i < gpu.size() && i < cpu.size(); ++i) {
    if (!std::isfinite(gpu[i])) ++a.nonfinite;
    const double d = std::fabs(double(gpu[i]) - double(cpu[i]));
    if (d > a.max_abs || std::isnan(d)) {
      a.max_abs = d;
      a.worst = i;
    }
  }
  return a;
}

// The GPU result against the CPU's: cosine >= 0.999 and rel_l2 <= the dtype's bound, no NaN / Inf.
#define EXPECT_GPU_MATCHES_CPU(gpu, cpu, rel_bound)                                                          \
  do {                                                                                                       \
    const auto quill_a_ = ::quill::test::agreement(gpu, cpu);                                                \
    RecordProperty("agreement", quill_a_.report());                                                          \
    EXPECT_EQ(quill_a_.nonfinite, 0u) << quill_a_.report();                                                  \
    EXPECT_GE(quill_a_.cosine, 0.999) << quill_a_.report();                                                  \
    EXPECT_LE(quill_a_.rel_l2, rel_bound) << quill_a_.report();                                              \
    std::printf("    [agreement] %s: %s\n", ::testing::UnitTest::GetInstance()->current_test_info()->name(), \
                quill_a_.report().c_str());                                                                  \
  } while (0)

// Per-dtype bounds on rel_l2 against the f32 CPU ops (bf16 has an 8-bit mantissa: 2^-9 = 2e-3
// relative rounding per element, shrinking in sums of independent errors).
inline constexpr double kBf16LinearBound = 8e-3;     // x rounded to bf16 (and W, if it was not bf16)
inline constexpr double kBf16AttentionBound = 2e-2;  // q, k, v and P rounded to bf16
inline constexpr double kF32Bound = 1e-5;            // f32 kernels; only the summation order differs

inline std::vector<uint16_t> to_bf16(const std::vector<float>& v) {
  std::vector<uint16_t> out(v.size());
  for (size_t i = 0; i < v.size(); ++i) out[i] = f32_to_bf16(v[i]);
  return out;
}
inline std::vector<uint16_t> to_f16(const std::vector<float>& v) {
  std::vector<uint16_t> out(v.size());
  for (size_t i = 0; i < v.size(); ++i) out[i] = f32_to_f16(v[i]);
  return out;
}

}  // namespace quill::test
