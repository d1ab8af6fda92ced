// Pieces every AVX-512 panel micro-kernel uses (quant_kernels_avx512.cpp, quant_exact_i8_avx512.cpp,
// quant_kernels_amx.cpp): the sub-panel width, the column masks of a partly filled sub-panel, the
// f32 output tile's load / bias-and-store, and an in-place VPDPBUSD. For *_avx512.cpp / *_amx.cpp
// files only (they are built with the AVX-512 flags).
#pragma once

#include "core/avx512_intrinsics.h"

#include <cstdint>

#include "quant/quant_kernels.h"

namespace quill::quant::detail::avx512 {
#if defined(QUILL_EMULATE_AVX512)
// quant_kernels_amx.cpp includes this header built natively: the emulated copies of these inline
// functions get their own names, so the linker cannot merge the two.
inline namespace emulated {
#endif

constexpr int kPanelNr = 32;  // columns per sub-panel: two zmm of f32

// The lanes of one 16-column half that hold real columns.
inline __mmask16 lane_mask(int64_t valid) {
  return valid <= 0 ? __mmask16(0) : (valid >= 16 ? __mmask16(0xFFFF) : __mmask16((1u << valid) - 1));
}

// The f32 accumulators of an MR x 32 output tile at y: zero on the first k block, else the partial
// sums already there.
template <int MR>
inline void load_tile(const TileArgs& a, const float* y, __mmask16 mk0, __mmask16 mk1, __m512 (&c0)[MR],
                      __m512 (&c1)[MR]) {
#pragma GCC unroll 16
  for (int i = 0; i < MR; ++i) {
    c0[i] = a.first ? _mm512_setzero_ps() : _mm512_maskz_loadu_ps(mk0, y + i * a.ldy);
    c1[i] = a.first ? _mm512_setzero_ps() : _mm512_maskz_loadu_ps(mk1, y + i * a.ldy + 16);
  }
}

// Stores the tile to y, adding the bias after the last k block.
template <int MR>
inline void store_tile(const TileArgs& a, float* y, __mmask16 mk0, __mmask16 mk1, const __m512 (&c0)[MR],
                       const __m512 (&c1)[MR]) {
  __m512 bias0 = _mm512_setzero_ps(), bias1 = _mm512_setzero_ps();
  if (a.last && a.bias) {
    bias0 = _mm512_maskz_loadu_ps(mk0, a.bias + a.n0);
    bias1 = _mm512_maskz_loadu_ps(mk1, a.bias + a.n0 + 16);
  }
#pragma GCC unroll 16
  for (int i = 0; i < MR; ++i) {
    _mm512_mask_storeu_ps(y + i * a.ldy, mk0, _mm512_add_ps(c0[i], bias0));
    _mm512_mask_storeu_ps(y + i * a.ldy + 16, mk1, _mm512_add_ps(c1[i], bias1));
  }
}

// acc += per 32-bit lane, the sum over 4 bytes of (a as u8) * (b as s8), in place. GCC 12 lowers
// _mm512_dpbusd_epi32 to a register copy, the dot product and a copy back per call; with a register
// file full of accumulators that doubles the instructions and spills some every iteration
// (measured: the exact int8 kernel at 1.0x sgemm with the intrinsic, 1.4x with this).
inline __m512i dpbusd(__m512i acc, __m512i a, __m512i b) {
#if defined(QUILL_EMULATE_AVX512)
  return _mm512_dpbusd_epi32(acc, a, b);
#else
  asm("vpdpbusd %2, %1, %0" : "+v"(acc) : "v"(a), "v"(b));
  return acc;
#endif
}

#if defined(QUILL_EMULATE_AVX512)
}  // inline namespace emulated
#endif
}  // namespace quill::quant::detail::avx512
