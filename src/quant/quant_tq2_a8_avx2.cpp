// tq2_0_g128 A8 on AVX2 without VNNI: int8 activations (u8 = q + 128, the scalar prep's numerics)
// times ternary weights with VPMADDUBSW, which multiplies 32 byte pairs into 16 int16 sums per
// instruction. A pair sum is at most 2 * 255 = 510, so a whole 128-group (32 quads) accumulates
// in int16 without saturating (<= 16320) before one VPMADDWD widens it to the group's exact int32
// sum per column; the group scale is applied in f32 and the +128 offset removed at the end with
// the panel's correction, as in the VNNI kernel (quant_kernels_avx512.cpp).
//
// Panel (kI8, nr = 16): [K/4][16] u32 of four int8 weights, then f32 d[K/128][16], then f32
// c[16] = 128 * sum_g d_g * sum_{k in g} w[k].
#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <cstring>

#include "quant/formats.h"
#include "quant/panel_avx2.h"
#include "quant/quant_kernels.h"

namespace quill::quant::detail::avx2 {

namespace {

constexpr int kNr = kPanelNr;
constexpr int kG = kTq2BlockSize;  // 128
// 3 rows x 2 halves x (int16 + f32) accumulators, 2 weights, 1 x: 15 of 16 ymm. Keeping the f32
// sums in memory to fit 4-6 rows measured slower (1.5-1.9x sgemm against 2.0-2.7x), and again
// with slab-packed x (6 rows: 0.90x of this tile, won 2 of 9 pairs in scripts/bench-pair.sh).
constexpr int kMr = 3;

void decode_i8_tq2(const WeightView& w, int64_t n0, int64_t rows, uint8_t* panel) {
  decode_i8_tq2_panel(w, n0, rows, kNr, panel);
}

// y holds sum_g d_g * I_g between k blocks; the last block applies (acc - c) * s_x + bias.
template <int MR>
void tile_i8(const TileArgs& a) {
  // x arrives in slabs of kMr rows (quant_kernels.h): quad q of the tile's row i at x + (q * kMr + i) * 4.
  const uint8_t* x = slab_tile_start(a, kMr, 4);
  const auto* b = reinterpret_cast<const int32_t*>(a.panel) + (a.k0 / 4) * kNr;
  const float* dp = reinterpret_cast<const float*>(a.panel + a.K * kNr) + (a.k0 / kG) * kNr;
  const int64_t ldy = a.ldy;
  const TileColumns cols = tile_columns(a.nvalid);
  float* y = a.y + a.m0 * ldy + a.n0;
  __m256 f0[MR], f1[MR];
  load_tile<MR>(a.first, y, ldy, cols, f0, f1);
  const __m256i ones = _mm256_set1_epi16(1);
  for (int64_t g = 0; g < a.kc / kG; ++g) {
    __m256i s0[MR], s1[MR];
#pragma GCC unroll 8
    for (int i = 0; i < MR; ++i) s0[i] = s1[i] = _mm256_setzero_si256();
    const uint8_t* xg = x + g * (kG / 4) * kMr * 4;
#pragma GCC unroll 4
    for (int q = 0; q < kG / 4; ++q) {
      const __m256i b0 = _mm256_load_si256(reinterpret_cast<const __m256i*>(b + q * kNr));
      const __m256i b1 = _mm256_load_si256(reinterpret_cast<const __m256i*>(b + q * kNr + 8));
#pragma GCC unroll 8
      for (int i = 0; i < MR; ++i) {
        int32_t quad;
        std::memcpy(&quad, xg + (q * kMr + i) * 4, 4);
        const __m256i xv = _mm256_set1_epi32(quad);
        s0[i] = _mm256_add_epi16(s0[i], _mm256_maddubs_epi16(xv, b0));
        s1[i] = _mm256_add_epi16(s1[i], _mm256_maddubs_epi16(xv, b1));
      }
    }
    b += (kG / 4) * kNr;
    const __m256 d0 = _mm256_load_ps(dp + g * kNr), d1 = _mm256_load_ps(dp + g * kNr + 8);
#pragma GCC unroll 8
    for (int i = 0; i < MR; ++i) {
      f0[i] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(_mm256_madd_epi16(s0[i], ones)), d0, f0[i]);
      f1[i] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(_mm256_madd_epi16(s1[i], ones)), d1, f1[i]);
    }
  }
  if (a.last) {
    const float* c = reinterpret_cast<const float*>(a.panel + a.K * kNr) + (a.K / kG) * kNr;
    const __m256 c0 = _mm256_load_ps(c), c1 = _mm256_load_ps(c + 8);
    __m256 bias0, bias1;
    load_bias(a.bias, a.n0, cols, bias0, bias1);
#pragma GCC unroll 8
    for (int i = 0; i < MR; ++i) {
      const __m256 s = _mm256_set1_ps(a.act_scale[a.m0 + i]);
      f0[i] = _mm256_fmadd_ps(_mm256_sub_ps(f0[i], c0), s, bias0);
      f1[i] = _mm256_fmadd_ps(_mm256_sub_ps(f1[i], c1), s, bias1);
    }
  }
  store_tile<MR>(y, ldy, cols, f0, f1);
}

void tile(const TileArgs& a) {
  switch (a.mr) {
    case 3:
      return tile_i8<3>(a);
    case 2:
      return tile_i8<2>(a);
    default:
      return tile_i8<1>(a);
  }
}

size_t pb_i8(int64_t K, int64_t g) { return panel_bytes_generic(PanelKind::kI8, kNr, K, g); }

const KernelSet kI8Tq2{PanelKind::kI8, kNr, kMr, kWholeK, kG, pb_i8, decode_i8_tq2, tile, kMr};

}  // namespace

const KernelSet* i8_kernels(DType dtype) { return dtype == DType::kTQ2_0_G128 ? &kI8Tq2 : nullptr; }

// The scalar prep_i8_rows's numerics (absmax / 127 per row, nearest-even rounding, clamp to
// +-127, + 128), eight values at a time.
void prep_i8_rows(const float* x, int64_t rows, int64_t K, uint8_t* out, float* scale) {
  const __m256 sign = _mm256_set1_ps(-0.0f);
  for (int64_t r = 0; r < rows; ++r) {
    const float* xr = x + r * K;
    __m256 vmax = _mm256_setzero_ps(), vnan = _mm256_setzero_ps();
    int64_t k = 0;
    for (; k + 8 <= K; k += 8) {
      const __m256 v = _mm256_loadu_ps(xr + k);
      vmax = _mm256_max_ps(vmax, _mm256_andnot_ps(sign, v));
      vnan = _mm256_or_ps(vnan, _mm256_cmp_ps(v, v, _CMP_UNORD_Q));
    }
    alignas(32) float lanes[8];
    _mm256_store_ps(lanes, vmax);
    float amax = 0.0f;
    bool nan = _mm256_movemask_ps(vnan) != 0;
    for (float v : lanes) amax = std::max(amax, v);
    for (; k < K; ++k) {
      amax = std::max(amax, std::fabs(xr[k]));
      nan |= std::isnan(xr[k]);
    }
    const float s = amax / 127.0f;
    const float inv = s > 0.0f ? 1.0f / s : 0.0f;
    scale[r] = nan || std::isinf(amax) ? NAN : s;
    const __m256 vinv = _mm256_set1_ps(inv);
    const __m256i off = _mm256_set1_epi32(128), lo = _mm256_set1_epi32(1), hi = _mm256_set1_epi32(255);
    const __m256i order = _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7);
    uint8_t* o = out + r * K;
    auto q8 = [&](int64_t at) {
      // cvtps rounds to nearest even (MXCSR default), as nearbyint in the scalar reference.
      const __m256i q = _mm256_add_epi32(_mm256_cvtps_epi32(_mm256_mul_ps(_mm256_loadu_ps(xr + at), vinv)), off);
      return _mm256_min_epi32(_mm256_max_epi32(q, lo), hi);
    };
    for (k = 0; k + 32 <= K; k += 32) {
      // packs/packus work within 128-bit lanes: bytes come out in the order 0-3 8-11 16-19 24-27
      // 4-7 ...; the dword permute puts them back.
      const __m256i p01 = _mm256_packs_epi32(q8(k), q8(k + 8)), p23 = _mm256_packs_epi32(q8(k + 16), q8(k + 24));
      const __m256i bytes = _mm256_permutevar8x32_epi32(_mm256_packus_epi16(p01, p23), order);
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(o + k), bytes);
    }
    for (; k < K; ++k) {
      float q = std::nearbyint(xr[k] * inv);
      q = std::min(127.0f, std::max(-127.0f, q));
      o[k] = uint8_t(int(q) + 128);
    }
  }
}

}  // namespace quill::quant::detail::avx2
