// The AVX-512 intrinsics the kernels use that SIMDe 0.7.4 lacks, for the emulation test build only
// (QUILL_EMULATE_AVX512; included by core/avx512_intrinsics.h after SIMDe). Each follows the
// instruction's definition in Intel's SDM lane by lane; the masked loads and stores touch only the
// selected lanes' memory, as the hardware does (a full-width access would read past a tail).
// GCC's <immintrin.h> declares every AVX-512 intrinsic whatever the flags, and calling one of its
// versions from these AVX2-built files fails to compile ("target specific option mismatch"), so
// an intrinsic missing both here and from SIMDe can never run natively by accident.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>

namespace quill::emu512 {
// Internal linkage, as in vec_math.h: each emulated file keeps its own copies.
namespace {

using F = simde__m512_private;
using I = simde__m512i_private;

inline simde__m512 maskz_loadu_ps(uint16_t k, const void* p) {
  F r;
  for (int i = 0; i < 16; ++i) {
    r.f32[i] = 0.0f;
    if (k >> i & 1) std::memcpy(&r.f32[i], static_cast<const float*>(p) + i, 4);
  }
  return simde__m512_from_private(r);
}

inline void mask_storeu_ps(void* p, uint16_t k, simde__m512 a) {
  const F v = simde__m512_to_private(a);
  for (int i = 0; i < 16; ++i)
    if (k >> i & 1) std::memcpy(static_cast<float*>(p) + i, &v.f32[i], 4);
}

inline simde__m256i maskz_loadu_epi16(uint16_t k, const void* p) {
  simde__m256i_private r;
  for (int i = 0; i < 16; ++i) {
    r.u16[i] = 0;
    if (k >> i & 1) std::memcpy(&r.u16[i], static_cast<const uint16_t*>(p) + i, 2);
  }
  return simde__m256i_from_private(r);
}

inline simde__m512 i32gather_ps(simde__m512i index, const void* base, int scale) {
  const I ix = simde__m512i_to_private(index);
  F r;
  for (int i = 0; i < 16; ++i) std::memcpy(&r.f32[i], static_cast<const char*>(base) + int64_t(ix.i32[i]) * scale, 4);
  return simde__m512_from_private(r);
}

inline simde__m512 cvtepi32_ps(simde__m512i a) {
  const I v = simde__m512i_to_private(a);
  F r;
  for (int i = 0; i < 16; ++i) r.f32[i] = float(v.i32[i]);
  return simde__m512_from_private(r);
}

// f32 -> i32 with the given rounding; NaN and out-of-range lanes give INT32_MIN, as VCVTPS2DQ does.
inline int32_t round_to_i32(float x, int rounding) {
  float r;
  switch (rounding & 7) {
    case 1:  // _MM_FROUND_TO_NEG_INF
      r = std::floor(x);
      break;
    case 2:  // _MM_FROUND_TO_POS_INF
      r = std::ceil(x);
      break;
    case 3:  // _MM_FROUND_TO_ZERO
      r = std::trunc(x);
      break;
    default:  // nearest even (the default MXCSR mode, and _MM_FROUND_CUR_DIRECTION)
      r = std::nearbyint(x);
  }
  if (!(r >= -2147483648.0f && r < 2147483648.0f)) return INT32_MIN;
  return int32_t(r);
}

inline simde__m512i cvt_roundps_epi32(simde__m512 a, int rounding) {
  const F v = simde__m512_to_private(a);
  I r;
  for (int i = 0; i < 16; ++i) r.i32[i] = round_to_i32(v.f32[i], rounding);
  return simde__m512i_from_private(r);
}

inline simde__m512i srai_epi32(simde__m512i a, unsigned n) {
  I v = simde__m512i_to_private(a);
  for (int i = 0; i < 16; ++i) v.i32[i] = v.i32[i] >> (n > 31 ? 31 : n);
  return simde__m512i_from_private(v);
}

inline simde__m128i cvtepi32_epi8(simde__m512i a) {  // truncation, VPMOVDB
  const I v = simde__m512i_to_private(a);
  simde__m128i_private r;
  for (int i = 0; i < 16; ++i) r.i8[i] = int8_t(uint8_t(uint32_t(v.i32[i]) & 0xFF));
  return simde__m128i_from_private(r);
}

inline simde__m512i cvtepi8_epi32(simde__m128i a) {
  const simde__m128i_private v = simde__m128i_to_private(a);
  I r;
  for (int i = 0; i < 16; ++i) r.i32[i] = v.i8[i];
  return simde__m512i_from_private(r);
}

inline simde__m512i cvtepu8_epi32(simde__m128i a) {
  const simde__m128i_private v = simde__m128i_to_private(a);
  I r;
  for (int i = 0; i < 16; ++i) r.i32[i] = v.u8[i];
  return simde__m512i_from_private(r);
}

inline simde__m512i cvtepu16_epi32(simde__m256i a) {
  const simde__m256i_private v = simde__m256i_to_private(a);
  I r;
  for (int i = 0; i < 16; ++i) r.i32[i] = v.u16[i];
  return simde__m512i_from_private(r);
}

inline simde__m512 cvtph_ps(simde__m256i a) {  // F16C is in the build's flags: exact
  const simde__m256i_private v = simde__m256i_to_private(a);
  F r;
  for (int half = 0; half < 2; ++half) {
    __m128i h;
    std::memcpy(&h, &v.u16[8 * half], 16);
    const __m256 f = _mm256_cvtph_ps(h);
    std::memcpy(&r.f32[8 * half], &f, 32);
  }
  return simde__m512_from_private(r);
}

// VCVTNEPS2BF16: round to nearest even, denormal inputs and outputs flushed to zero, NaN quieted.
inline uint16_t f32_to_bf16_ne(float x) {
  uint32_t u;
  std::memcpy(&u, &x, 4);
  if ((u & 0x7F800000u) == 0) return uint16_t((u >> 16) & 0x8000u);
  if ((u & 0x7FFFFFFFu) > 0x7F800000u) return uint16_t((u >> 16) | 0x40u);
  return uint16_t((u + 0x7FFFu + ((u >> 16) & 1u)) >> 16);
}

inline simde__m256bh cvtneps_pbh(simde__m512 a) {
  const F v = simde__m512_to_private(a);
  uint16_t out[16];
  for (int i = 0; i < 16; ++i) out[i] = f32_to_bf16_ne(v.f32[i]);
  simde__m256bh r;
  static_assert(sizeof(r) == sizeof(out));
  std::memcpy(&r, out, sizeof(out));
  return r;
}

inline simde__m512 shuffle_f32x4(simde__m512 a, simde__m512 b, int imm) {
  const F va = simde__m512_to_private(a), vb = simde__m512_to_private(b);
  F r;
  for (int lane = 0; lane < 4; ++lane) {
    const F& src = lane < 2 ? va : vb;
    const int from = (imm >> (2 * lane)) & 3;
    std::memcpy(&r.f32[4 * lane], &src.f32[4 * from], 16);
  }
  return simde__m512_from_private(r);
}

// The reductions in the order GCC's <avx512fintrin.h> defines them (halves, then quarters, then
// pairs), so float sums round as they do natively.
inline float reduce_add_ps(simde__m512 a) {
  const F v = simde__m512_to_private(a);
  float s8[8], s4[4];
  for (int i = 0; i < 8; ++i) s8[i] = v.f32[i + 8] + v.f32[i];
  for (int i = 0; i < 4; ++i) s4[i] = s8[i + 4] + s8[i];
  return (s4[0] + s4[2]) + (s4[1] + s4[3]);
}

inline float reduce_max_ps(simde__m512 a) {
  const F v = simde__m512_to_private(a);
  float m = v.f32[0];
  for (int i = 1; i < 16; ++i) m = v.f32[i] > m ? v.f32[i] : m;
  return m;
}

inline int reduce_add_epi32(simde__m512i a) {
  const I v = simde__m512i_to_private(a);
  uint32_t s = 0;
  for (int i = 0; i < 16; ++i) s += uint32_t(v.i32[i]);
  return int(s);
}

}  // namespace
}  // namespace quill::emu512

// GCC defines some of these as macros when not optimizing.
#undef _mm512_maskz_loadu_ps
#undef _mm512_mask_storeu_ps
#undef _mm256_maskz_loadu_epi16
#undef _mm512_i32gather_ps
#undef _mm512_cvtepi32_ps
#undef _mm512_cvt_roundps_epi32
#undef _mm512_cvtps_epi32
#undef _mm512_srai_epi32
#undef _mm512_cvtepi32_epi8
#undef _mm512_cvtepi8_epi32
#undef _mm512_cvtepu8_epi32
#undef _mm512_cvtepu16_epi32
#undef _mm512_cvtph_ps
#undef _mm512_cvtneps_pbh
#undef _mm512_shuffle_f32x4
#undef _mm512_reduce_add_ps
#undef _mm512_reduce_max_ps
#undef _mm512_reduce_add_epi32
#define _mm512_maskz_loadu_ps(k, p) quill::emu512::maskz_loadu_ps(k, p)
#define _mm512_mask_storeu_ps(p, k, a) quill::emu512::mask_storeu_ps(p, k, a)
#define _mm256_maskz_loadu_epi16(k, p) quill::emu512::maskz_loadu_epi16(k, p)
#define _mm512_i32gather_ps(i, p, s) quill::emu512::i32gather_ps(i, p, s)
#define _mm512_cvtepi32_ps(a) quill::emu512::cvtepi32_ps(a)
#define _mm512_cvt_roundps_epi32(a, r) quill::emu512::cvt_roundps_epi32(a, r)
#define _mm512_cvtps_epi32(a) quill::emu512::cvt_roundps_epi32(a, _MM_FROUND_CUR_DIRECTION)
#define _mm512_srai_epi32(a, n) quill::emu512::srai_epi32(a, n)
#define _mm512_cvtepi32_epi8(a) quill::emu512::cvtepi32_epi8(a)
#define _mm512_cvtepi8_epi32(a) quill::emu512::cvtepi8_epi32(a)
#define _mm512_cvtepu8_epi32(a) quill::emu512::cvtepu8_epi32(a)
#define _mm512_cvtepu16_epi32(a) quill::emu512::cvtepu16_epi32(a)
#define _mm512_cvtph_ps(a) quill::emu512::cvtph_ps(a)
#define _mm512_cvtneps_pbh(a) quill::emu512::cvtneps_pbh(a)
#define _mm512_shuffle_f32x4(a, b, imm) quill::emu512::shuffle_f32x4(a, b, imm)
#define _mm512_reduce_add_ps(a) quill::emu512::reduce_add_ps(a)
#define _mm512_reduce_max_ps(a) quill::emu512::reduce_max_ps(a)
#define _mm512_reduce_add_epi32(a) quill::emu512::reduce_add_epi32(a)
