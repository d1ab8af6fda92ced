// AVX-512 body of gelu_erf (same formula as the scalar one in gelu_erf.cpp; scalar tail).
#if defined(__x86_64__)
// GCC 12 flags the _mm512_undefined_ps() pass-through operand inside the unmasked max / min /
// roundscale / scalef intrinsics of vmath::exp_approx as maybe-uninitialized once inlined here
// (a false positive: the mask is all ones, the operand is never read).
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#include "backend/cpu/gelu_erf.h"
#include "backend/cpu/vec_math.h"

namespace quill::cpu::avx512 {

namespace {

inline __m512 gelu16(__m512 v) {
  using namespace gelu_erf_detail;
  const __m512 one = _mm512_set1_ps(1.0f), half = _mm512_set1_ps(0.5f);
  const __m512 z = _mm512_mul_ps(v, _mm512_set1_ps(kNegInvSqrt2));
  const __m512 a = _mm512_abs_ps(z);
  const __m512 t = _mm512_div_ps(one, _mm512_fmadd_ps(half, a, one));
  __m512 p = _mm512_set1_ps(kP[9]);
  for (int j = 8; j >= 0; --j) p = _mm512_fmadd_ps(p, t, _mm512_set1_ps(kP[j]));
  const __m512 e = _mm512_mul_ps(t, vmath::exp_approx(_mm512_fnmadd_ps(a, a, p)));  // erfc(|z|)
  const __mmask16 neg = _mm512_cmp_ps_mask(z, _mm512_setzero_ps(), _CMP_LT_OQ);
  const __m512 erfc = _mm512_mask_sub_ps(e, neg, _mm512_set1_ps(2.0f), e);
  return _mm512_mul_ps(_mm512_mul_ps(half, v), erfc);
}

}  // namespace

void gelu_erf(float* x, int64_t n) {
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) _mm512_storeu_ps(x + i, gelu16(_mm512_loadu_ps(x + i)));
  scalar::gelu_erf(x + i, n - i);
}

}  // namespace quill::cpu::avx512
#endif
