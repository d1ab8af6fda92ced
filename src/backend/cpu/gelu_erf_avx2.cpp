// AVX2 body of gelu_erf (same formula as the scalar one in gelu_erf.cpp; scalar tail).
#if defined(__x86_64__)
#include "backend/cpu/gelu_erf.h"
#include "backend/cpu/vec_math.h"

namespace quill::cpu::avx2 {

void gelu_erf(float* x, int64_t n) {
  using namespace gelu_erf_detail;
  const __m256 sign = _mm256_set1_ps(-0.0f), one = _mm256_set1_ps(1.0f), two = _mm256_set1_ps(2.0f);
  const __m256 half = _mm256_set1_ps(0.5f);
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256 v = _mm256_loadu_ps(x + i);
    const __m256 z = _mm256_mul_ps(v, _mm256_set1_ps(kNegInvSqrt2));
    const __m256 a = _mm256_andnot_ps(sign, z);
    const __m256 t = _mm256_div_ps(one, _mm256_fmadd_ps(half, a, one));
    __m256 p = _mm256_set1_ps(kP[9]);
    for (int j = 8; j >= 0; --j) p = _mm256_fmadd_ps(p, t, _mm256_set1_ps(kP[j]));
    const __m256 e = _mm256_mul_ps(t, vmath::exp_approx(_mm256_fnmadd_ps(a, a, p)));
    const __m256 erfc = _mm256_blendv_ps(e, _mm256_sub_ps(two, e), _mm256_cmp_ps(z, _mm256_setzero_ps(), _CMP_LT_OQ));
    _mm256_storeu_ps(x + i, _mm256_mul_ps(_mm256_mul_ps(half, v), erfc));
  }
  scalar::gelu_erf(x + i, n - i);
}

}  // namespace quill::cpu::avx2
#endif
