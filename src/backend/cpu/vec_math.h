// exp / exp2 for the CPU kernels, written once per instruction set so each kernel can inline them.
// All variants share one algorithm, so they agree to about an ulp:
//   exp2(x) = 2^n * e^(f ln 2), n = round(x), f = x - n in [-0.5, 0.5]
//   exp(x)  = 2^n * e^r,        n = round(x log2 e), r = x - n ln2 (two-constant Cody-Waite)
// with e^r from a degree-5 minimax polynomial (the well-known Cephes expf coefficients), max
// relative error ~1.5e-7 over the reduced range. Out of range: exp2(x <= -126) = 0 (so exp2(-inf)
// = 0, which the online softmax relies on); on the scalar / AVX2 paths exp clamps its input to
// [-87.3, 88.3] (AVX-512 underflows to 0 and overflows to inf via scalef). Callers use exp only as
// 1 / (1 + exp(.)), where that difference vanishes.
//
// The AVX2 / AVX-512 parts compile only where the including file is built with those flags
// (files named *_avx2.cpp / *_avx512.cpp).
#pragma once

#include <bit>
#include <cstdint>

#if defined(__AVX2__) || defined(__AVX512F__)
#include "core/avx512_intrinsics.h"
#endif

// Internal linkage: every kernel file gets its own copy compiled with its own ISA flags, so the
// linker can never hand an AVX-512 body of one of these to portable code.
namespace quill::cpu::vmath {
namespace {

inline constexpr float kLog2e = 1.44269504088896341f;
inline constexpr float kLn2Hi = 0.693359375f;  // ln 2 split so n * kLn2Hi is exact
inline constexpr float kLn2Lo = -2.12194440e-4f;
inline constexpr float kLn2 = 0.693147180559945309f;
inline constexpr float kExpP0 = 1.9875691500e-4f;
inline constexpr float kExpP1 = 1.3981999507e-3f;
inline constexpr float kExpP2 = 8.3334519073e-3f;
inline constexpr float kExpP3 = 4.1665795894e-2f;
inline constexpr float kExpP4 = 1.6666665459e-1f;
inline constexpr float kExpP5 = 5.0000001201e-1f;

// e^r for |r| <= ln2/2.
inline float exp_reduced(float r) {
  float p = kExpP0;
  p = p * r + kExpP1;
  p = p * r + kExpP2;
  p = p * r + kExpP3;
  p = p * r + kExpP4;
  p = p * r + kExpP5;
  return p * r * r + r + 1.0f;
}

// Round to nearest (ties even) without a libm call, so loops over it vectorise; |x| < 2^22.
inline float round_magic(float x) { return (x + 12582912.0f) - 12582912.0f; }

// 2^n for integral n in [-126, 127].
inline float pow2i(float n) { return std::bit_cast<float>((static_cast<int32_t>(n) + 127) << 23); }

// Scalar versions: branch-free apart from the clamps, so plain loops over them auto-vectorise.
inline float exp2_approx(float x) {
  x = x < -126.0f ? -126.0f : x;
  x = x > 127.0f ? 127.0f : x;
  const float n = round_magic(x);
  const float r = (x - n) * kLn2;
  const float v = exp_reduced(r) * pow2i(n);
  return x <= -126.0f ? 0.0f : v;
}

inline float exp_approx(float x) {
  x = x < -87.3f ? -87.3f : x;
  x = x > 88.3f ? 88.3f : x;  // keeps n <= 127; exp(88.3) is already 2.1e38
  const float n = round_magic(x * kLog2e);
  const float r = (x - n * kLn2Hi) - n * kLn2Lo;
  return exp_reduced(r) * pow2i(n);
}

#if defined(QUILL_AVX512_CODE)
inline __m512 exp_reduced(__m512 r) {
  __m512 p = _mm512_set1_ps(kExpP0);
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(kExpP1));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(kExpP2));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(kExpP3));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(kExpP4));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(kExpP5));
  const __m512 r2 = _mm512_mul_ps(r, r);
  return _mm512_fmadd_ps(p, r2, _mm512_add_ps(r, _mm512_set1_ps(1.0f)));
}

// scalef computes p * 2^n with correct overflow to inf and gradual underflow to 0.
inline __m512 exp2_approx(__m512 x) {
  x = _mm512_max_ps(x, _mm512_set1_ps(-160.0f));  // also maps -inf to a finite value
  x = _mm512_min_ps(x, _mm512_set1_ps(160.0f));
  const __m512 n = _mm512_roundscale_ps(x, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  const __m512 r = _mm512_mul_ps(_mm512_sub_ps(x, n), _mm512_set1_ps(kLn2));
  return _mm512_scalef_ps(exp_reduced(r), n);
}

// 2^x for finite x without clamping (scalef turns a very negative n into 0): a degree-5 fit of
// 2^f on [-0.5, 0.5] (relative-error minimax by reweighted least squares, 1.9e-7 max relative
// error evaluated in f32). The softmax's hot loop, where every input is s - max <= 0.
inline __m512 exp2_fast(__m512 x) {
  const __m512 n = _mm512_roundscale_ps(x, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  const __m512 f = _mm512_sub_ps(x, n);
  __m512 p = _mm512_set1_ps(1.3264722656458616e-3f);
  p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(9.671512991189957e-3f));
  p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(5.550733581185341e-2f));
  p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(2.4022242426872253e-1f));
  p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(6.931470036506653e-1f));
  p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(1.0f));
  return _mm512_scalef_ps(p, n);
}

inline __m512 exp_approx(__m512 x) {
  x = _mm512_max_ps(x, _mm512_set1_ps(-110.0f));
  x = _mm512_min_ps(x, _mm512_set1_ps(110.0f));
  const __m512 n =
      _mm512_roundscale_ps(_mm512_mul_ps(x, _mm512_set1_ps(kLog2e)), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m512 r = _mm512_fnmadd_ps(n, _mm512_set1_ps(kLn2Hi), x);
  r = _mm512_fnmadd_ps(n, _mm512_set1_ps(kLn2Lo), r);
  return _mm512_scalef_ps(exp_reduced(r), n);
}
#endif

#if defined(__AVX2__)
inline __m256 exp_reduced(__m256 r) {
  __m256 p = _mm256_set1_ps(kExpP0);
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(kExpP1));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(kExpP2));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(kExpP3));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(kExpP4));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(kExpP5));
  const __m256 r2 = _mm256_mul_ps(r, r);
  return _mm256_fmadd_ps(p, r2, _mm256_add_ps(r, _mm256_set1_ps(1.0f)));
}

// 2^n for integral n in [-126, 127].
inline __m256 pow2i(__m256 n) {
  const __m256i e = _mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127));
  return _mm256_castsi256_ps(_mm256_slli_epi32(e, 23));
}

inline __m256 exp2_approx(__m256 x) {
  x = _mm256_max_ps(x, _mm256_set1_ps(-126.0f));
  x = _mm256_min_ps(x, _mm256_set1_ps(127.0f));
  const __m256 n = _mm256_round_ps(x, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  const __m256 r = _mm256_mul_ps(_mm256_sub_ps(x, n), _mm256_set1_ps(kLn2));
  const __m256 v = _mm256_mul_ps(exp_reduced(r), pow2i(n));
  const __m256 underflow = _mm256_cmp_ps(x, _mm256_set1_ps(-126.0f), _CMP_LE_OQ);
  return _mm256_andnot_ps(underflow, v);
}

inline __m256 exp_approx(__m256 x) {
  x = _mm256_max_ps(x, _mm256_set1_ps(-87.3f));
  x = _mm256_min_ps(x, _mm256_set1_ps(88.3f));
  const __m256 n =
      _mm256_round_ps(_mm256_mul_ps(x, _mm256_set1_ps(kLog2e)), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m256 r = _mm256_fnmadd_ps(n, _mm256_set1_ps(kLn2Hi), x);
  r = _mm256_fnmadd_ps(n, _mm256_set1_ps(kLn2Lo), r);
  return _mm256_mul_ps(exp_reduced(r), pow2i(n));
}
#endif

}  // namespace
}  // namespace quill::cpu::vmath
