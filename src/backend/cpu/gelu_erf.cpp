#include "backend/cpu/gelu_erf.h"

#include "backend/cpu/vec_math.h"
#include "core/cpu_features.h"

namespace quill::cpu {

namespace scalar {

void gelu_erf(float* x, int64_t n) {
  using namespace gelu_erf_detail;
  for (int64_t i = 0; i < n; ++i) {
    const float v = x[i];
    const float z = v * kNegInvSqrt2;
    const float a = z < 0.0f ? -z : z;
    const float t = 1.0f / (1.0f + 0.5f * a);
    float p = kP[9];
    for (int j = 8; j >= 0; --j) p = p * t + kP[j];
    const float e = t * vmath::exp_approx(p - a * a);  // erfc(a)
    x[i] = 0.5f * v * (z < 0.0f ? 2.0f - e : e);
  }
}

}  // namespace scalar

void gelu_erf(float* x, int64_t n, ThreadPool& pool) {
  using Fn = void (*)(float*, int64_t);
  Fn fn = scalar::gelu_erf;
#if defined(__x86_64__)
  if (cpu_isa() == CpuIsa::kAvx512)
    fn = avx512::gelu_erf;
  else if (cpu_isa() == CpuIsa::kAvx2)
    fn = avx2::gelu_erf;
#endif
  constexpr int64_t kChunk = 1 << 14;
  pool.parallel_for((n + kChunk - 1) / kChunk, 1, [&](int64_t b, int64_t e) {
    const int64_t lo = b * kChunk;
    const int64_t hi = e * kChunk < n ? e * kChunk : n;
    fn(x + lo, hi - lo);
  });
}

}  // namespace quill::cpu
