// AVX2 panel kernels for quant_linear: the exact (f32 FMA) path for every weight type, and
// tq2_0_g128 A8 on VPMADDUBSW (no VNNI at this level; kernel in quant_tq2_a8_avx2.cpp). The other
// A8 modes use the scalar reference here.
#include <immintrin.h>

#include <algorithm>
#include <cstring>

#include "quant/quant_kernels.h"

namespace quill::quant::detail::avx2 {

namespace {

constexpr int kNr = 16;
constexpr int kMr = 6;

void decode_f32(const WeightView& w, int64_t n0, int64_t rows, uint8_t* panel) {
  float* out = reinterpret_cast<float*>(panel);
  constexpr int64_t kChunk = 128;
  alignas(32) float tile[kNr][kChunk];
  for (int64_t k0 = 0; k0 < w.K; k0 += kChunk) {
    const int64_t len = std::min(kChunk, w.K - k0);
    for (int64_t r = 0; r < kNr; ++r) {
      if (r < rows)
        decode_row_chunk_f32(w, n0 + r, k0, len, tile[r]);
      else
        std::memset(tile[r], 0, sizeof(tile[r]));
    }
    for (int64_t k = 0; k < len; ++k)
      for (int64_t r = 0; r < kNr; ++r) out[(k0 + k) * kNr + r] = tile[r][k];
  }
}

inline __m256i lane_mask(int64_t valid) {
  const __m256i idx = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
  return _mm256_cmpgt_epi32(_mm256_set1_epi32(int(std::max<int64_t>(0, std::min<int64_t>(8, valid)))), idx);
}

template <int MR>
void tile_f32(const TileArgs& a) {
  const float* x = static_cast<const float*>(a.act) + a.m0 * a.lda + a.k0;
  const float* b = reinterpret_cast<const float*>(a.panel) + a.k0 * kNr;
  const __m256i mk0 = lane_mask(a.nvalid), mk1 = lane_mask(a.nvalid - 8);
  float* y = a.y + a.m0 * a.ldy + a.n0;
  __m256 c0[MR], c1[MR];
#pragma GCC unroll 8
  for (int i = 0; i < MR; ++i) {
    c0[i] = a.first ? _mm256_setzero_ps() : _mm256_maskload_ps(y + i * a.ldy, mk0);
    c1[i] = a.first ? _mm256_setzero_ps() : _mm256_maskload_ps(y + i * a.ldy + 8, mk1);
  }
  const int64_t kc = a.kc;  // a local: a.kc reloaded every iteration costs a memory operand
  for (int64_t k = 0; k < kc; ++k) {
    const __m256 b0 = _mm256_load_ps(b + k * kNr), b1 = _mm256_load_ps(b + k * kNr + 8);
#pragma GCC unroll 8
    for (int i = 0; i < MR; ++i) {
      const __m256 xv = _mm256_broadcast_ss(x + i * a.lda + k);
      c0[i] = _mm256_fmadd_ps(xv, b0, c0[i]);
      c1[i] = _mm256_fmadd_ps(xv, b1, c1[i]);
    }
  }
  __m256 bias0 = _mm256_setzero_ps(), bias1 = _mm256_setzero_ps();
  if (a.last && a.bias) {
    bias0 = _mm256_maskload_ps(a.bias + a.n0, mk0);
    bias1 = _mm256_maskload_ps(a.bias + a.n0 + 8, mk1);
  }
#pragma GCC unroll 8
  for (int i = 0; i < MR; ++i) {
    _mm256_maskstore_ps(y + i * a.ldy, mk0, _mm256_add_ps(c0[i], bias0));
    _mm256_maskstore_ps(y + i * a.ldy + 8, mk1, _mm256_add_ps(c1[i], bias1));
  }
}

void tile(const TileArgs& a) {
  switch (a.mr) {
    case 6:
      return tile_f32<6>(a);
    case 5:
      return tile_f32<5>(a);
    case 4:
      return tile_f32<4>(a);
    case 3:
      return tile_f32<3>(a);
    case 2:
      return tile_f32<2>(a);
    default:
      return tile_f32<1>(a);
  }
}

size_t pb_f32(int64_t K, int64_t g) { return panel_bytes_generic(PanelKind::kF32, kNr, K, g); }

const KernelSet kF32{PanelKind::kF32, kNr, kMr, 256, 1, pb_f32, decode_f32, tile};

}  // namespace

const KernelSet* kernels(DType dtype, PanelKind kind) {
  if (kind == PanelKind::kI8) return i8_kernels(dtype);
  return kind == PanelKind::kF32 ? &kF32 : nullptr;
}

}  // namespace quill::quant::detail::avx2
