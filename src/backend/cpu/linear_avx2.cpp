// AVX2 (+F16C, FMA) weight decode and gemv tile for linear.cpp (the driver: linear_driver.inl); scalar tails.
#if defined(__x86_64__)
#include <immintrin.h>

#include <cstring>

#include "backend/cpu/kernels.h"

namespace quill::cpu::avx2 {

namespace {

template <DType T>
inline __m256 load8(const void* row, int64_t i) {
  if constexpr (T == DType::kF32) {
    return _mm256_loadu_ps(static_cast<const float*>(row) + i);
  } else {
    const __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i*>(static_cast<const uint16_t*>(row) + i));
    if constexpr (T == DType::kF16) return _mm256_cvtph_ps(h);
    return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16));
  }
}

template <DType T>
inline float load1(const void* row, int64_t i) {
  if constexpr (T == DType::kF32)
    return static_cast<const float*>(row)[i];
  else if constexpr (T == DType::kF16)
    return f16_to_f32(static_cast<const uint16_t*>(row)[i]);
  else {  // not quill::bf16_to_f32: an inline from a header must not be compiled with AVX2 flags here
    const uint32_t bits = uint32_t(static_cast<const uint16_t*>(row)[i]) << 16;
    float f;
    std::memcpy(&f, &bits, 4);
    return f;
  }
}

template <DType T>
void decode(const void* src, float* dst, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) _mm256_storeu_ps(dst + i, load8<T>(src, i));
  for (; i < n; ++i) dst[i] = load1<T>(src, i);
}

inline float hsum(__m256 v) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

template <DType T, int R, int MG>
inline void gemv_tile(const float* x, int64_t K, const char* w0, int64_t row_bytes, const float* bias, int64_t n,
                      float* y, int64_t ldy) {
  __m256 acc[R][MG];
  for (int r = 0; r < R; ++r)
    for (int m = 0; m < MG; ++m) acc[r][m] = _mm256_setzero_ps();
  int64_t k = 0;
  for (; k + 8 <= K; k += 8) {
    for (int r = 0; r < R; ++r) {
      const __m256 wv = load8<T>(w0 + r * row_bytes, k);
      for (int m = 0; m < MG; ++m) acc[r][m] = _mm256_fmadd_ps(wv, _mm256_loadu_ps(x + m * K + k), acc[r][m]);
    }
  }
  for (int r = 0; r < R; ++r)
    for (int m = 0; m < MG; ++m) {
      float s = hsum(acc[r][m]);
      for (int64_t t = k; t < K; ++t) s += x[m * K + t] * load1<T>(w0 + r * row_bytes, t);
      y[m * ldy + n + r] = s + (bias ? bias[n + r] : 0.0f);
    }
}

// W rows per tile in the gemv main loop.
constexpr int kGemvRows = 2;

}  // namespace

#include "backend/cpu/linear_driver.inl"

}  // namespace quill::cpu::avx2
#endif
