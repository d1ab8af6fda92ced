// AVX2 (+F16C, FMA) weight decode and few-rows linear for linear.cpp; scalar tails.
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

// Rows of x in groups of up to 4, inside the loop over W rows: a tile of W rows is read from
// memory once and re-used from L1 by every group.
template <DType T, int R>
inline void gemv_rows_tile(const float* x, int64_t M, int64_t K, const char* w0, int64_t row_bytes, const float* bias,
                           int64_t n, float* y, int64_t ldy) {
  for (int64_t m0 = 0; m0 < M; m0 += 4) {
    const float* xm = x + m0 * K;
    float* ym = y + m0 * ldy;
    switch (M - m0 < 4 ? M - m0 : 4) {
      case 1:
        gemv_tile<T, R, 1>(xm, K, w0, row_bytes, bias, n, ym, ldy);
        break;
      case 2:
        gemv_tile<T, R, 2>(xm, K, w0, row_bytes, bias, n, ym, ldy);
        break;
      case 3:
        gemv_tile<T, R, 3>(xm, K, w0, row_bytes, bias, n, ym, ldy);
        break;
      default:
        gemv_tile<T, R, 4>(xm, K, w0, row_bytes, bias, n, ym, ldy);
        break;
    }
  }
}

template <DType T>
void gemv(const float* x, int64_t M, int64_t K, const void* W, const float* bias, int64_t n0, int64_t n1, float* y,
          int64_t ldy) {
  const int64_t row_bytes = K * int64_t(T == DType::kF32 ? 4 : 2);
  const char* wb = static_cast<const char*>(W);
  int64_t n = n0;
  for (; n + 2 <= n1; n += 2) gemv_rows_tile<T, 2>(x, M, K, wb + n * row_bytes, row_bytes, bias, n, y, ldy);
  for (; n < n1; ++n) gemv_rows_tile<T, 1>(x, M, K, wb + n * row_bytes, row_bytes, bias, n, y, ldy);
}

}  // namespace

void decode_rows(DType dtype, const void* src, float* dst, int64_t n) {
  switch (dtype) {
    case DType::kF16:
      decode<DType::kF16>(src, dst, n);
      break;
    case DType::kBF16:
      decode<DType::kBF16>(src, dst, n);
      break;
    case DType::kF32:
      std::memcpy(dst, src, size_t(n) * sizeof(float));
      break;
    default:
      convert_to_f32(dtype, src, dst, n);
      break;
  }
}

void gemv_rows(const float* x, int64_t M, int64_t K, DType dtype, const void* W, const float* bias, int64_t n0,
               int64_t n1, float* y, int64_t ldy) {
  switch (dtype) {
    case DType::kF16:
      gemv<DType::kF16>(x, M, K, W, bias, n0, n1, y, ldy);
      break;
    case DType::kBF16:
      gemv<DType::kBF16>(x, M, K, W, bias, n0, n1, y, ldy);
      break;
    default:
      gemv<DType::kF32>(x, M, K, W, bias, n0, n1, y, ldy);
      break;
  }
}

}  // namespace quill::cpu::avx2
#endif
