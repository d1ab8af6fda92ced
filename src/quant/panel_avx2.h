// Pieces every AVX2 panel micro-kernel uses (quant_kernels_avx2.cpp, quant_tq2_a8_avx2.cpp): the
// sub-panel width, the columns of a partly filled sub-panel, and the f32 output tile's load and
// store. For *_avx2.cpp files only (they are built with the AVX2 flags).
#pragma once

#include <immintrin.h>

#include <algorithm>
#include <cstdint>

#include "quant/quant_kernels.h"

namespace quill::quant::detail::avx2 {

constexpr int kPanelNr = 16;  // columns per sub-panel: two ymm of f32

// The lanes of one 8-column half that hold real columns.
inline __m256i lane_mask(int64_t valid) {
  const __m256i idx = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
  return _mm256_cmpgt_epi32(_mm256_set1_epi32(int(std::max<int64_t>(0, std::min<int64_t>(8, valid)))), idx);
}

// The real columns of an output tile. A full tile is loaded and stored unmasked: VMASKMOVPS is
// microcoded and slow on AMD cores.
struct TileColumns {
  __m256i lo, hi;
  bool full;
};
inline TileColumns tile_columns(int64_t nvalid) {
  return {lane_mask(nvalid), lane_mask(nvalid - 8), nvalid == kPanelNr};
}

// The f32 accumulators of an MR x 16 output tile at y (rows ldy apart): zero on the first k block,
// else the partial sums already there.
template <int MR>
inline void load_tile(bool first, const float* y, int64_t ldy, const TileColumns& cols, __m256 (&c0)[MR],
                      __m256 (&c1)[MR]) {
#pragma GCC unroll 8
  for (int i = 0; i < MR; ++i) {
    if (first) {
      c0[i] = c1[i] = _mm256_setzero_ps();
    } else if (cols.full) {
      c0[i] = _mm256_loadu_ps(y + i * ldy);
      c1[i] = _mm256_loadu_ps(y + i * ldy + 8);
    } else {
      c0[i] = _mm256_maskload_ps(y + i * ldy, cols.lo);
      c1[i] = _mm256_maskload_ps(y + i * ldy + 8, cols.hi);
    }
  }
}

// The bias of the tile's columns n0.. (masked), zero where there is no bias.
inline void load_bias(const float* bias, int64_t n0, const TileColumns& cols, __m256& b0, __m256& b1) {
  b0 = bias ? _mm256_maskload_ps(bias + n0, cols.lo) : _mm256_setzero_ps();
  b1 = bias ? _mm256_maskload_ps(bias + n0 + 8, cols.hi) : _mm256_setzero_ps();
}

// Stores the tile to y (rows ldy apart), its real columns only.
template <int MR>
inline void store_tile(float* y, int64_t ldy, const TileColumns& cols, const __m256 (&c0)[MR], const __m256 (&c1)[MR]) {
#pragma GCC unroll 8
  for (int i = 0; i < MR; ++i) {
    if (cols.full) {
      _mm256_storeu_ps(y + i * ldy, c0[i]);
      _mm256_storeu_ps(y + i * ldy + 8, c1[i]);
    } else {
      _mm256_maskstore_ps(y + i * ldy, cols.lo, c0[i]);
      _mm256_maskstore_ps(y + i * ldy + 8, cols.hi, c1[i]);
    }
  }
}

}  // namespace quill::quant::detail::avx2
