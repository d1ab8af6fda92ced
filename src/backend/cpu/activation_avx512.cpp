// AVX-512 bodies of the activations in activation.cpp (same formulas; masked tail).
#if defined(__x86_64__)
// GCC 12 flags the _mm512_undefined_ps() inside its own intrinsics as (maybe-)uninitialized.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#include "backend/cpu/kernels.h"
#include "backend/cpu/vec_math.h"

namespace quill::cpu::avx512 {

namespace {

inline __m512 gelu16(__m512 v) {
  const __m512 c0 = _mm512_set1_ps(0.7978845608028654f);
  const __m512 c1 = _mm512_set1_ps(0.7978845608028654f * 0.044715f);
  const __m512 u = _mm512_mul_ps(v, _mm512_fmadd_ps(_mm512_mul_ps(v, v), c1, c0));
  const __m512 e = vmath::exp_approx(_mm512_mul_ps(u, _mm512_set1_ps(-2.0f)));
  return _mm512_div_ps(v, _mm512_add_ps(e, _mm512_set1_ps(1.0f)));
}

inline __m512 silu16(__m512 v) {
  const __m512 e = vmath::exp_approx(_mm512_sub_ps(_mm512_setzero_ps(), v));
  return _mm512_div_ps(v, _mm512_add_ps(e, _mm512_set1_ps(1.0f)));
}

template <__m512 (*F)(__m512)>
void apply(float* x, int64_t n) {
  int64_t i = 0;
  for (; i + 32 <= n; i += 32) {
    const __m512 a = F(_mm512_loadu_ps(x + i));
    const __m512 b = F(_mm512_loadu_ps(x + i + 16));
    _mm512_storeu_ps(x + i, a);
    _mm512_storeu_ps(x + i + 16, b);
  }
  for (; i < n; i += 16) {
    const __mmask16 m = n - i >= 16 ? __mmask16(0xffff) : __mmask16((1u << (n - i)) - 1);
    _mm512_mask_storeu_ps(x + i, m, F(_mm512_maskz_loadu_ps(m, x + i)));
  }
}

}  // namespace

void gelu_tanh(float* x, int64_t n) { apply<gelu16>(x, n); }
void silu(float* x, int64_t n) { apply<silu16>(x, n); }

}  // namespace quill::cpu::avx512
#endif
