// AVX2 bodies of the activations in activation.cpp (same formulas; scalar tail).
#if defined(__x86_64__)
#include "backend/cpu/kernels.h"
#include "backend/cpu/vec_math.h"

namespace quill::cpu::avx2 {

namespace {

inline __m256 gelu8(__m256 v) {
  const __m256 c0 = _mm256_set1_ps(0.7978845608028654f);
  const __m256 c1 = _mm256_set1_ps(0.7978845608028654f * 0.044715f);
  const __m256 u = _mm256_mul_ps(v, _mm256_fmadd_ps(_mm256_mul_ps(v, v), c1, c0));
  const __m256 e = vmath::exp_approx(_mm256_mul_ps(u, _mm256_set1_ps(-2.0f)));
  return _mm256_div_ps(v, _mm256_add_ps(e, _mm256_set1_ps(1.0f)));
}

inline __m256 silu8(__m256 v) {
  const __m256 e = vmath::exp_approx(_mm256_sub_ps(_mm256_setzero_ps(), v));
  return _mm256_div_ps(v, _mm256_add_ps(e, _mm256_set1_ps(1.0f)));
}

}  // namespace

void gelu_tanh(float* x, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) _mm256_storeu_ps(x + i, gelu8(_mm256_loadu_ps(x + i)));
  scalar::gelu_tanh(x + i, n - i);
}

void silu(float* x, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) _mm256_storeu_ps(x + i, silu8(_mm256_loadu_ps(x + i)));
  scalar::silu(x + i, n - i);
}

}  // namespace quill::cpu::avx2
#endif
