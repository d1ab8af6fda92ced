// AVX-512 panel kernels for quant_linear: f32 FMA (exact), int8 VNNI (A8) and bf16 dot (A8).
// GCC 12 reports the intrinsics' internal _mm512_undefined_* values as maybe-uninitialized.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#include "core/avx512_intrinsics.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "quant/formats.h"
#include "quant/panel_avx512.h"
#include "quant/quant_kernels.h"

namespace quill::quant::detail::avx512 {

namespace {

constexpr int kNr = kPanelNr;

// ---------------- decode ----------------

// Transposes the 32-byte code arrays of `rows` rows' block g into t[b][r] (b = byte, r = row);
// missing rows get `pad`.
template <typename Block>
void gather_block_bytes(const WeightView& w, int64_t n0, int64_t rows, int64_t g, const int8_t* (*qs_of)(const Block&),
                        uint8_t t[32][kNr], float d[kNr], uint8_t pad) {
  for (int64_t r = 0; r < kNr; ++r) {
    if (r < rows) {
      const Block& blk = reinterpret_cast<const Block*>(w.data + (n0 + r) * w.row_bytes)[g];
      const auto* q = reinterpret_cast<const uint8_t*>(qs_of(blk));
      for (int b = 0; b < 32; ++b) t[b][r] = q[b];
      d[r] = f16_to_f32(blk.d);
    } else {
      for (int b = 0; b < 32; ++b) t[b][r] = pad;
      d[r] = 0.0f;
    }
  }
}
const int8_t* tq2_qs(const BlockTq2& b) { return reinterpret_cast<const int8_t*>(b.qs); }
const int8_t* q8_qs(const BlockQ8_0& b) { return b.qs; }

void decode_f32_tq2(const WeightView& w, int64_t n0, int64_t rows, uint8_t* panel) {
  float* out = reinterpret_cast<float*>(panel);
  alignas(64) uint8_t t[32][kNr];
  alignas(64) float d[kNr];
  const __m512 lut = _mm512_setr_ps(-1, 0, 1, 0, -1, 0, 1, 0, -1, 0, 1, 0, -1, 0, 1, 0);
  const __m512i three = _mm512_set1_epi32(3);
  for (int64_t g = 0; g < w.K / kTq2BlockSize; ++g) {
    gather_block_bytes<BlockTq2>(w, n0, rows, g, tq2_qs, t, d, 0x55);
    const __m512 d0 = _mm512_load_ps(d), d1 = _mm512_load_ps(d + 16);
    float* o = out + g * kTq2BlockSize * kNr;
    for (int b = 0; b < 32; ++b) {
      const __m512i v0 = _mm512_cvtepu8_epi32(_mm_load_si128(reinterpret_cast<const __m128i*>(t[b])));
      const __m512i v1 = _mm512_cvtepu8_epi32(_mm_load_si128(reinterpret_cast<const __m128i*>(t[b] + 16)));
      for (int j = 0; j < 4; ++j) {
        const __m512i c0 = _mm512_and_si512(_mm512_srli_epi32(v0, 2 * j), three);
        const __m512i c1 = _mm512_and_si512(_mm512_srli_epi32(v1, 2 * j), three);
        _mm512_store_ps(o + (4 * b + j) * kNr, _mm512_mul_ps(_mm512_permutexvar_ps(c0, lut), d0));
        _mm512_store_ps(o + (4 * b + j) * kNr + 16, _mm512_mul_ps(_mm512_permutexvar_ps(c1, lut), d1));
      }
    }
  }
}

void decode_f32_q8(const WeightView& w, int64_t n0, int64_t rows, uint8_t* panel) {
  float* out = reinterpret_cast<float*>(panel);
  alignas(64) uint8_t t[32][kNr];
  alignas(64) float d[kNr];
  for (int64_t g = 0; g < w.K / kQ8BlockSize; ++g) {
    gather_block_bytes<BlockQ8_0>(w, n0, rows, g, q8_qs, t, d, 0);
    const __m512 d0 = _mm512_load_ps(d), d1 = _mm512_load_ps(d + 16);
    float* o = out + g * kQ8BlockSize * kNr;
    for (int b = 0; b < 32; ++b) {
      const __m512i v0 = _mm512_cvtepi8_epi32(_mm_load_si128(reinterpret_cast<const __m128i*>(t[b])));
      const __m512i v1 = _mm512_cvtepi8_epi32(_mm_load_si128(reinterpret_cast<const __m128i*>(t[b] + 16)));
      _mm512_store_ps(o + b * kNr, _mm512_mul_ps(_mm512_cvtepi32_ps(v0), d0));
      _mm512_store_ps(o + b * kNr + 16, _mm512_mul_ps(_mm512_cvtepi32_ps(v1), d1));
    }
  }
}

// Row n, elements [k0, k0 + len), to f32: f16 and bf16 with vector conversions (the scalar
// f16_to_f32 cost a fifth of an f16 GEMM's time), fp8 by the scalar decoder.
void decode_chunk(const WeightView& w, int64_t n, int64_t k0, int64_t len, float* out) {
  if (w.dtype != DType::kF16 && w.dtype != DType::kBF16) return decode_row_chunk_f32(w, n, k0, len, out);
  const auto* src = reinterpret_cast<const uint16_t*>(w.data + n * w.row_bytes) + k0;
  int64_t k = 0;
  for (; k + 16 <= len; k += 16) {
    const __m256i h = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(src + k));
    _mm512_storeu_ps(out + k, w.dtype == DType::kF16
                                  ? _mm512_cvtph_ps(h)
                                  : _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16)));
  }
  if (k < len) decode_row_chunk_f32(w, n, k0 + k, len - k, out + k);
}

// Transposes v (16 rows of 16 floats) in registers: four butterfly stages, each swapping the
// off-diagonal blocks of size b = 8, 4, 2, 1 between rows i and i + b.
void transpose16(__m512 (&v)[16]) {
#pragma GCC unroll 4
  for (int b = 8; b >= 1; b /= 2) {
    alignas(64) int32_t lo[16], hi[16];
    for (int c = 0; c < 16; ++c) {
      lo[c] = (c & b) ? 16 + c - b : c;
      hi[c] = (c & b) ? 16 + c : c + b;
    }
    const __m512i ilo = _mm512_load_si512(lo), ihi = _mm512_load_si512(hi);
#pragma GCC unroll 16
    for (int i = 0; i < 16; ++i) {
      if (i & b) continue;
      const __m512 a = v[i], c = v[i + b];
      v[i] = _mm512_permutex2var_ps(a, ilo, c);
      v[i + b] = _mm512_permutex2var_ps(a, ihi, c);
    }
  }
}

// f16 / bf16 / fp8: rows decoded 16 elements at a time into a small tile, then transposed 16 x 16
// in registers (the gathers this replaced took 7 % of an f16 GEMM on Zen 4; perf).
void decode_f32_float(const WeightView& w, int64_t n0, int64_t rows, uint8_t* panel) {
  float* out = reinterpret_cast<float*>(panel);
  constexpr int64_t kChunk = 128;
  alignas(64) float tile[kNr][kChunk];
  for (int64_t k0 = 0; k0 < w.K; k0 += kChunk) {
    const int64_t len = std::min(kChunk, w.K - k0);
    for (int64_t r = 0; r < kNr; ++r) {
      if (r < rows)
        decode_chunk(w, n0 + r, k0, len, tile[r]);
      else
        std::memset(tile[r], 0, sizeof(tile[r]));
    }
    int64_t k = 0;
    for (; k + 16 <= len; k += 16) {
      for (int h = 0; h < 2; ++h) {
        __m512 v[16];
#pragma GCC unroll 16
        for (int r = 0; r < 16; ++r) v[r] = _mm512_load_ps(&tile[16 * h + r][k]);
        transpose16(v);
#pragma GCC unroll 16
        for (int j = 0; j < 16; ++j) _mm512_store_ps(out + (k0 + k + j) * kNr + 16 * h, v[j]);
      }
    }
    for (; k < len; ++k)
      for (int r = 0; r < kNr; ++r) out[(k0 + k) * kNr + r] = tile[r][k];
  }
}

// bf16 pairs: the 32-bit word holding (k, k+1) of row r goes to panel[k/2][r]. 16 rows x 16 pairs
// at a time through transpose16 (the scalar copy this replaced took ~10 % of a bf16 A8 GEMM);
// missing rows read as zero through the load mask.
void decode_bf16_pairs(const WeightView& w, int64_t n0, int64_t rows, uint8_t* panel) {
  auto* out = reinterpret_cast<uint32_t*>(panel);
  const int64_t kp = w.K / 2, kp16 = kp / 16 * 16;
  for (int h = 0; h < 2; ++h) {
    const uint8_t* src[16];
    __mmask16 live[16];
    for (int r = 0; r < 16; ++r) {
      const bool has = 16 * h + r < rows;
      src[r] = w.data + (n0 + (has ? 16 * h + r : 0)) * w.row_bytes;
      live[r] = has ? __mmask16(0xFFFF) : __mmask16(0);
    }
    for (int64_t p = 0; p < kp16; p += 16) {
      __m512 v[16];
#pragma GCC unroll 16
      for (int r = 0; r < 16; ++r) v[r] = _mm512_maskz_loadu_ps(live[r], src[r] + p * 4);  // bits, as floats
      transpose16(v);
#pragma GCC unroll 16
      for (int j = 0; j < 16; ++j) _mm512_store_ps(reinterpret_cast<float*>(out + (p + j) * kNr + 16 * h), v[j]);
    }
    for (int64_t p = kp16; p < kp; ++p)
      for (int r = 0; r < 16; ++r) {
        uint32_t word = 0;
        if (live[r]) std::memcpy(&word, src[r] + p * 4, 4);
        out[p * kNr + 16 * h + r] = word;
      }
  }
}

// int8 quads, then scales, then correction (quant_kernels.h).
void decode_i8_tq2(const WeightView& w, int64_t n0, int64_t rows, uint8_t* panel) {
  decode_i8_tq2_panel(w, n0, rows, kNr, panel);
}

void decode_i8_q8(const WeightView& w, int64_t n0, int64_t rows, uint8_t* panel) {
  const int64_t K = w.K, G = kQ8BlockSize, ng = K / G;
  auto* codes = reinterpret_cast<uint32_t*>(panel);
  float* d = reinterpret_cast<float*>(panel + K * kNr);
  float* c = d + ng * kNr;
  for (int64_t r = 0; r < kNr; ++r) {
    if (r >= rows) {
      for (int64_t q = 0; q < K / 4; ++q) codes[q * kNr + r] = 0;
      for (int64_t g = 0; g < ng; ++g) d[g * kNr + r] = 0.0f;
      c[r] = 0.0f;
      continue;
    }
    const auto* blk = reinterpret_cast<const BlockQ8_0*>(w.data + (n0 + r) * w.row_bytes);
    float corr = 0.0f;
    for (int64_t g = 0; g < ng; ++g) {
      int s = 0;
      for (int b = 0; b < 8; ++b) std::memcpy(&codes[(g * 8 + b) * kNr + r], blk[g].qs + 4 * b, 4);
      for (int j = 0; j < 32; ++j) s += blk[g].qs[j];
      const float dg = f16_to_f32(blk[g].d);
      d[g * kNr + r] = dg;
      corr += dg * float(128 * s);
    }
    c[r] = corr;
  }
}

// ---------------- micro-kernels ----------------

constexpr int kMrF32 = 12, kMrBf16 = 12, kMrI8 = 6;

// Activations arrive in slabs of kMrF32 rows (quant_kernels.h): the tile's rows at x[k * kMrF32 + i],
// one forward stream instead of 12 strided ones.
template <int MR>
void tile_f32(const TileArgs& a) {
  const float* x = reinterpret_cast<const float*>(slab_tile_start(a, kMrF32, 1));
  const float* b = reinterpret_cast<const float*>(a.panel) + a.k0 * kNr;
  const __mmask16 mk0 = lane_mask(a.nvalid), mk1 = lane_mask(a.nvalid - 16);
  float* y = a.y + a.m0 * a.ldy + a.n0;
  __m512 c0[MR], c1[MR];
  load_tile<MR>(a, y, mk0, mk1, c0, c1);
  for (int64_t k = 0; k < a.kc; ++k) {
    const __m512 b0 = _mm512_load_ps(b + k * kNr), b1 = _mm512_load_ps(b + k * kNr + 16);
#pragma GCC unroll 16
    for (int i = 0; i < MR; ++i) {
      const __m512 xv = _mm512_set1_ps(x[k * kMrF32 + i]);
      c0[i] = _mm512_fmadd_ps(xv, b0, c0[i]);
      c1[i] = _mm512_fmadd_ps(xv, b1, c1[i]);
    }
  }
  store_tile<MR>(a, y, mk0, mk1, c0, c1);
}

// bf16 pairs in slabs of kMrBf16 rows: the tile's pair p of row i at x[p * kMrBf16 + i]. Read as
// 12 rows K apart instead, it was 3.6 % slower at K = 14336 (docs/PERFORMANCE.md, "bf16 activations
// in slabs").
template <int MR>
void tile_bf16(const TileArgs& a) {
  const auto* x = reinterpret_cast<const uint32_t*>(slab_tile_start(a, kMrBf16, 2));
  const auto* b = reinterpret_cast<const uint32_t*>(a.panel) + (a.k0 / 2) * kNr;
  const __mmask16 mk0 = lane_mask(a.nvalid), mk1 = lane_mask(a.nvalid - 16);
  float* y = a.y + a.m0 * a.ldy + a.n0;
  __m512 c0[MR], c1[MR];
  load_tile<MR>(a, y, mk0, mk1, c0, c1);
  for (int64_t p = 0; p < a.kc / 2; ++p) {
    const __m512bh b0 = (__m512bh)_mm512_load_si512(b + p * kNr);
    const __m512bh b1 = (__m512bh)_mm512_load_si512(b + p * kNr + 16);
#pragma GCC unroll 16
    for (int i = 0; i < MR; ++i) {
      const __m512bh xv = (__m512bh)_mm512_set1_epi32(int(x[p * kMrBf16 + i]));
      c0[i] = _mm512_dpbf16_ps(c0[i], xv, b0);
      c1[i] = _mm512_dpbf16_ps(c1[i], xv, b1);
    }
  }
  store_tile<MR>(a, y, mk0, mk1, c0, c1);
}

// y holds sum_g d_g * I_g between k blocks; the last block applies (acc - c) * s_x + bias.
// x is read as rows lda apart: packing them into slabs measured 1 % slower on Zen 4, with k blocks
// of 1024 then (docs/PERFORMANCE.md, "Activation slabs for the AVX-512 tiles").
template <int MR, int G>
void tile_i8(const TileArgs& a) {
  const auto* x = static_cast<const uint8_t*>(a.act) + a.m0 * a.lda + a.k0;
  const auto* b = reinterpret_cast<const int32_t*>(a.panel) + (a.k0 / 4) * kNr;
  const float* dp = reinterpret_cast<const float*>(a.panel + a.K * kNr) + (a.k0 / G) * kNr;
  const __mmask16 mk0 = lane_mask(a.nvalid), mk1 = lane_mask(a.nvalid - 16);
  float* y = a.y + a.m0 * a.ldy + a.n0;
  __m512 f0[MR], f1[MR];
  load_tile<MR>(a, y, mk0, mk1, f0, f1);
  const int64_t lda = a.lda;
  for (int64_t g = 0; g < a.kc / G; ++g) {
    __m512i s0[MR], s1[MR];
#pragma GCC unroll 16
    for (int i = 0; i < MR; ++i) s0[i] = s1[i] = _mm512_setzero_si512();
    const uint8_t* xg = x + g * G;
#pragma GCC unroll 4
    for (int q = 0; q < G / 4; ++q) {
      const __m512i b0 = _mm512_load_si512(b + q * kNr), b1 = _mm512_load_si512(b + q * kNr + 16);
#pragma GCC unroll 16
      for (int i = 0; i < MR; ++i) {
        int32_t quad;
        std::memcpy(&quad, xg + i * lda + 4 * q, 4);
        const __m512i xv = _mm512_set1_epi32(quad);
        s0[i] = dpbusd(s0[i], xv, b0);
        s1[i] = dpbusd(s1[i], xv, b1);
      }
    }
    b += (G / 4) * kNr;
    const __m512 d0 = _mm512_load_ps(dp + g * kNr), d1 = _mm512_load_ps(dp + g * kNr + 16);
#pragma GCC unroll 16
    for (int i = 0; i < MR; ++i) {
      f0[i] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(s0[i]), d0, f0[i]);
      f1[i] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(s1[i]), d1, f1[i]);
    }
  }
  if (a.last) {
    const float* c = reinterpret_cast<const float*>(a.panel + a.K * kNr) + (a.K / G) * kNr;
    const __m512 c0 = _mm512_load_ps(c), c1 = _mm512_load_ps(c + 16);
    __m512 bias0 = _mm512_setzero_ps(), bias1 = _mm512_setzero_ps();
    if (a.bias) {
      bias0 = _mm512_maskz_loadu_ps(mk0, a.bias + a.n0);
      bias1 = _mm512_maskz_loadu_ps(mk1, a.bias + a.n0 + 16);
    }
#pragma GCC unroll 16
    for (int i = 0; i < MR; ++i) {
      const __m512 s = _mm512_set1_ps(a.act_scale[a.m0 + i]);
      f0[i] = _mm512_fmadd_ps(_mm512_sub_ps(f0[i], c0), s, bias0);
      f1[i] = _mm512_fmadd_ps(_mm512_sub_ps(f1[i], c1), s, bias1);
    }
  }
#pragma GCC unroll 16
  for (int i = 0; i < MR; ++i) {
    _mm512_mask_storeu_ps(y + i * a.ldy, mk0, f0[i]);
    _mm512_mask_storeu_ps(y + i * a.ldy + 16, mk1, f1[i]);
  }
}

// Dispatch on the row count: full tiles use MR, the remainder its own instantiation.
template <template <int> class T, int MR>
struct ByRows {
  static void run(const TileArgs& a) {
    if (a.mr == MR) return T<MR>::go(a);
    if constexpr (MR > 1) ByRows<T, MR - 1>::run(a);
  }
};
template <int MR>
struct F32T {
  static void go(const TileArgs& a) { tile_f32<MR>(a); }
};
template <int MR>
struct Bf16T {
  static void go(const TileArgs& a) { tile_bf16<MR>(a); }
};
template <int MR>
struct I8Tq2T {
  static void go(const TileArgs& a) { tile_i8<MR, 128>(a); }
};
template <int MR>
struct I8Q8T {
  static void go(const TileArgs& a) { tile_i8<MR, 32>(a); }
};

size_t pb_f32(int64_t K, int64_t g) { return panel_bytes_generic(PanelKind::kF32, kNr, K, g); }
size_t pb_bf16(int64_t K, int64_t g) { return panel_bytes_generic(PanelKind::kBf16, kNr, K, g); }
size_t pb_i8(int64_t K, int64_t g) { return panel_bytes_generic(PanelKind::kI8, kNr, K, g); }

void t_f32(const TileArgs& a) { ByRows<F32T, kMrF32>::run(a); }
void t_bf16(const TileArgs& a) { ByRows<Bf16T, kMrBf16>::run(a); }
void t_i8_tq2(const TileArgs& a) { ByRows<I8Tq2T, kMrI8>::run(a); }
void t_i8_q8(const TileArgs& a) { ByRows<I8Q8T, kMrI8>::run(a); }

const KernelSet kF32Tq2{PanelKind::kF32, kNr,   kMrF32, kWholeK,       1, pb_f32,
                        decode_f32_tq2,  t_f32, kMrF32, kWidePassBytes};
const KernelSet kF32Q8{PanelKind::kF32, kNr, kMrF32, kWholeK, 1, pb_f32, decode_f32_q8, t_f32, kMrF32, kWidePassBytes};
const KernelSet kF32Float{PanelKind::kF32,  kNr,   kMrF32, kWholeK,       1, pb_f32,
                          decode_f32_float, t_f32, kMrF32, kWidePassBytes};
const KernelSet kBf16{PanelKind::kBf16,  kNr,    kMrBf16, kWholeK,        1,   pb_bf16,
                      decode_bf16_pairs, t_bf16, kMrBf16, kWidePassBytes, true};
const KernelSet kI8Tq2{PanelKind::kI8, kNr, kMrI8, kWholeK, 128, pb_i8, decode_i8_tq2, t_i8_tq2};
const KernelSet kI8Q8{PanelKind::kI8, kNr, kMrI8, kWholeK, 32, pb_i8, decode_i8_q8, t_i8_q8};

}  // namespace

const KernelSet* kernels(DType dtype, PanelKind kind) {
  switch (kind) {
    case PanelKind::kF32:
      if (dtype == DType::kTQ2_0_G128) return &kF32Tq2;
      if (dtype == DType::kQ8_0) return &kF32Q8;
      return &kF32Float;
    case PanelKind::kBf16:
      return dtype == DType::kBF16 ? &kBf16 : nullptr;
    case PanelKind::kI8:
      if (dtype == DType::kTQ2_0_G128) return &kI8Tq2;
      if (dtype == DType::kQ8_0) return &kI8Q8;
      return nullptr;
    case PanelKind::kBf16x3:
      return nullptr;  // AMX only (quant_kernels_amx.cpp)
    case PanelKind::kI8x3:
      return exact_i8_kernels(dtype);  // quant_exact_i8_avx512.cpp
  }
  return nullptr;
}

void prep_i8_rows(const float* x, int64_t rows, int64_t K, uint8_t* out, float* scale) {
  const __m512 sign = _mm512_set1_ps(-0.0f);
  for (int64_t r = 0; r < rows; ++r) {
    const float* xr = x + r * K;
    __m512 vmax = _mm512_setzero_ps();
    __mmask16 nanmask = 0;
    int64_t k = 0;
    for (; k + 16 <= K; k += 16) {
      const __m512 v = _mm512_loadu_ps(xr + k);
      vmax = _mm512_max_ps(vmax, _mm512_andnot_ps(sign, v));
      nanmask |= _mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q);
    }
    float amax = _mm512_reduce_max_ps(vmax);
    bool nan = nanmask != 0;
    for (; k < K; ++k) {
      amax = std::max(amax, std::fabs(xr[k]));
      nan |= std::isnan(xr[k]);
    }
    const float s = amax / 127.0f;
    const float inv = s > 0.0f ? 1.0f / s : 0.0f;
    scale[r] = nan || std::isinf(amax) ? NAN : s;  // as the scalar prep: NaN / Inf rows give NaN
    const __m512 vinv = _mm512_set1_ps(inv);
    const __m512i off = _mm512_set1_epi32(128), lo = _mm512_set1_epi32(1), hi = _mm512_set1_epi32(255);
    uint8_t* o = out + r * K;
    for (k = 0; k + 16 <= K; k += 16) {
      // cvtps rounds to nearest even (MXCSR default), as nearbyint in the scalar reference.
      __m512i q = _mm512_add_epi32(_mm512_cvtps_epi32(_mm512_mul_ps(_mm512_loadu_ps(xr + k), vinv)), off);
      q = _mm512_min_epi32(_mm512_max_epi32(q, lo), hi);
      _mm_storeu_si128(reinterpret_cast<__m128i*>(o + k), _mm512_cvtepi32_epi8(q));
    }
    for (; k < K; ++k) {
      float q = std::nearbyint(xr[k] * inv);
      q = std::min(127.0f, std::max(-127.0f, q));
      o[k] = uint8_t(int(q) + 128);
    }
  }
}

void prep_bf16_rows(const float* x, int64_t rows, int64_t K, uint16_t* out) {
  const int64_t n = rows * K;
  int64_t i = 0;
  for (; i + 16 <= n; i += 16)
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + i), (__m256i)_mm512_cvtneps_pbh(_mm512_loadu_ps(x + i)));
  for (; i < n; ++i) out[i] = f32_to_bf16(x[i]);
}

}  // namespace quill::quant::detail::avx512
