// AVX-512 weight decode and gemv tile for linear.cpp (the driver: linear_driver.inl).
#if defined(__x86_64__)
// GCC 12 flags the _mm512_undefined_ps() inside its own intrinsics as (maybe-)uninitialized.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#include "core/avx512_intrinsics.h"

#include "backend/cpu/kernels.h"

namespace quill::cpu::avx512 {

namespace {

// 16 weights starting at element i of a row, as f32 (lanes past `m` read as 0).
template <DType T>
inline __m512 load16(const void* row, int64_t i, __mmask16 m) {
  if constexpr (T == DType::kF32) {
    return _mm512_maskz_loadu_ps(m, static_cast<const float*>(row) + i);
  } else {
    const __m256i h = _mm256_maskz_loadu_epi16(m, static_cast<const uint16_t*>(row) + i);
    if constexpr (T == DType::kF16) return _mm512_cvtph_ps(h);
    return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
  }
}

template <DType T>
void decode(const void* src, float* dst, int64_t n) {
  int64_t i = 0;
  for (; i + 32 <= n; i += 32) {
    _mm512_storeu_ps(dst + i, load16<T>(src, i, 0xffff));
    _mm512_storeu_ps(dst + i + 16, load16<T>(src, i + 16, 0xffff));
  }
  for (; i < n; i += 16) {
    const __mmask16 m = n - i >= 16 ? __mmask16(0xffff) : __mmask16((1u << (n - i)) - 1);
    _mm512_mask_storeu_ps(dst + i, m, load16<T>(src, i, m));
  }
}

// y[m, n0 + r] for r < R rows of W and m < MG rows of x: R * MG accumulators across K.
template <DType T, int R, int MG>
inline void gemv_tile(const float* x, int64_t K, const char* w0, int64_t row_bytes, const float* bias, int64_t n,
                      float* y, int64_t ldy) {
  __m512 acc[R][MG];
  for (int r = 0; r < R; ++r)
    for (int m = 0; m < MG; ++m) acc[r][m] = _mm512_setzero_ps();
  for (int64_t k = 0; k < K; k += 16) {
    const __mmask16 mask = K - k >= 16 ? __mmask16(0xffff) : __mmask16((1u << (K - k)) - 1);
    __m512 xv[MG];
    for (int m = 0; m < MG; ++m) xv[m] = _mm512_maskz_loadu_ps(mask, x + m * K + k);
    for (int r = 0; r < R; ++r) {
      const __m512 wv = load16<T>(w0 + r * row_bytes, k, mask);
      for (int m = 0; m < MG; ++m) acc[r][m] = _mm512_fmadd_ps(wv, xv[m], acc[r][m]);
    }
  }
  for (int r = 0; r < R; ++r)
    for (int m = 0; m < MG; ++m) y[m * ldy + n + r] = _mm512_reduce_add_ps(acc[r][m]) + (bias ? bias[n + r] : 0.0f);
}

// W rows per tile in the gemv main loop.
constexpr int kGemvRows = 4;

}  // namespace

#include "backend/cpu/linear_driver.inl"

}  // namespace quill::cpu::avx512
#endif
