// AMX (Sapphire Rapids and later) tile kernels for tq2_0_g128, 16 rows x 32 columns per call.
//
// A8: u8 activations x int8 ternary codes with TDPBUSD. It reads the same sub-panel as the
// AVX-512 VNNI kernel ([K/4][32][4] codes, then the group scales d and the u8 correction c), so
// the two differ only in who does the int32 dot products: the group sums are exact integers in
// both and are scaled and accumulated in the same order, giving identical results.
//
// Exact: f32 activations split as x = hi + mid + lo, three bf16 values whose sum is x exactly
// (8 + 8 + 8 significant bits), times the ternary codes as bf16 (-1, 0, +1, exact) with TDPBF16PS:
// every product is exact and the sums are f32, so the result is an f32-accurate GEMM of x with
// the exactly decoded weights (only the summation order differs from an FMA loop).
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#include <immintrin.h>

#include <cstdlib>
#include <cstring>

#include "quant/formats.h"
#include "quant/panel_avx512.h"
#include "quant/quant_kernels.h"
#include "quill/dtype.h"

namespace quill::quant::detail::amx {

namespace {

constexpr int kNr = avx512::kPanelNr;
constexpr int kMr = 16;
constexpr int64_t kGroup = 128;  // tq2_0_g128

struct alignas(64) TileConfig {
  uint8_t palette_id;
  uint8_t start_row;
  uint8_t reserved[14];
  uint16_t colsb[16];
  uint8_t rows[16];
};

// Both kernels use the same shapes: tmm0, tmm1 C (rows x 64 bytes: 16 int32 or 16 f32); tmm2 A
// (rows x 64 bytes: 64 u8 or 32 bf16 along k); tmm3, tmm4 B (16 rows of 64 bytes: k-quads of int8
// or k-pairs of bf16, 16 columns). Loaded on every call: other code on this thread (oneDNN's AMX matmul) may have
// replaced it.
void configure(int rows) {
  TileConfig c{};
  c.palette_id = 1;
  c.rows[0] = c.rows[1] = c.rows[2] = uint8_t(rows);
  c.colsb[0] = c.colsb[1] = c.colsb[2] = 64;
  c.rows[3] = c.rows[4] = 16;
  c.colsb[3] = c.colsb[4] = 64;
  _tile_loadconfig(&c);
}

using avx512::lane_mask;

// f32 accumulators of a 16 x 32 output tile, kept in L1 (too many for registers): zero on the first
// k block, else the partial sums already in y.
void load_accumulators(const TileArgs& a, const float* y, __mmask16 mk0, __mmask16 mk1, float (*f)[kNr]) {
  for (int i = 0; i < int(a.mr); ++i) {
    const __m512 z = _mm512_setzero_ps();
    _mm512_store_ps(f[i], a.first ? z : _mm512_maskz_loadu_ps(mk0, y + i * a.ldy));
    _mm512_store_ps(f[i] + 16, a.first ? z : _mm512_maskz_loadu_ps(mk1, y + i * a.ldy + 16));
  }
}

void tile_tq2(const TileArgs& a) {
  const int rows = int(a.mr);
  configure(rows);
  const auto* x = static_cast<const uint8_t*>(a.act) + a.m0 * a.lda + a.k0;
  const uint8_t* codes = a.panel + (a.k0 / 4) * kNr * 4;
  const float* dp = reinterpret_cast<const float*>(a.panel + a.K * kNr) + (a.k0 / kGroup) * kNr;
  const __mmask16 mk0 = lane_mask(a.nvalid), mk1 = lane_mask(a.nvalid - 16);
  float* y = a.y + a.m0 * a.ldy + a.n0;
  alignas(64) int32_t c0[kMr][16], c1[kMr][16];
  alignas(64) float f[kMr][kNr];
  load_accumulators(a, y, mk0, mk1, f);
  for (int64_t g = 0; g < a.kc / kGroup; ++g) {
    _tile_zero(0);
    _tile_zero(1);
    for (int h = 0; h < 2; ++h) {  // two 64-deep steps per 128-group
      const int64_t k = g * kGroup + h * 64;
      _tile_loadd(2, x + k, a.lda);
      const uint8_t* b = codes + (k / 4) * kNr * 4;  // k-quad rows of 128 bytes: columns 0-15, 16-31
      _tile_loadd(3, b, kNr * 4);
      _tile_loadd(4, b + 64, kNr * 4);
      _tile_dpbusd(0, 2, 3);
      _tile_dpbusd(1, 2, 4);
    }
    _tile_stored(0, c0, 64);
    _tile_stored(1, c1, 64);
    const __m512 d0 = _mm512_load_ps(dp + g * kNr), d1 = _mm512_load_ps(dp + g * kNr + 16);
    for (int i = 0; i < rows; ++i) {
      _mm512_store_ps(f[i], _mm512_fmadd_ps(_mm512_cvtepi32_ps(_mm512_load_si512(c0[i])), d0, _mm512_load_ps(f[i])));
      _mm512_store_ps(f[i] + 16,
                      _mm512_fmadd_ps(_mm512_cvtepi32_ps(_mm512_load_si512(c1[i])), d1, _mm512_load_ps(f[i] + 16)));
    }
  }
  if (a.last) {
    const float* corr = reinterpret_cast<const float*>(a.panel + a.K * kNr) + (a.K / kGroup) * kNr;
    const __m512 cc0 = _mm512_load_ps(corr), cc1 = _mm512_load_ps(corr + 16);
    const __m512 b0 = a.bias ? _mm512_maskz_loadu_ps(mk0, a.bias + a.n0) : _mm512_setzero_ps();
    const __m512 b1 = a.bias ? _mm512_maskz_loadu_ps(mk1, a.bias + a.n0 + 16) : _mm512_setzero_ps();
    for (int i = 0; i < rows; ++i) {
      const __m512 s = _mm512_set1_ps(a.act_scale[a.m0 + i]);
      _mm512_store_ps(f[i], _mm512_fmadd_ps(_mm512_sub_ps(_mm512_load_ps(f[i]), cc0), s, b0));
      _mm512_store_ps(f[i] + 16, _mm512_fmadd_ps(_mm512_sub_ps(_mm512_load_ps(f[i] + 16), cc1), s, b1));
    }
  }
  for (int i = 0; i < rows; ++i) {
    _mm512_mask_storeu_ps(y + i * a.ldy, mk0, _mm512_load_ps(f[i]));
    _mm512_mask_storeu_ps(y + i * a.ldy + 16, mk1, _mm512_load_ps(f[i] + 16));
  }
}

// ---- exact mode: bf16x3 activations, bf16 ternary panel ----

// Panel: [K/2][32][2] bf16 codes (-1, 0, +1), then f32 d[K/128][32].
size_t panel_bytes_bf16(int64_t K, int64_t) { return size_t(K) * kNr * 2 + size_t(K / kGroup) * kNr * 4; }

struct PairLut {
  uint64_t four[256];  // a code byte -> its 4 weights as bf16, low pair first
  PairLut() {
    for (int v = 0; v < 256; ++v) {
      uint64_t w = 0;
      for (int j = 0; j < 4; ++j) {
        const int x = tq2_code_value((unsigned(v) >> (2 * j)) & 3u);
        const uint64_t b = x < 0 ? 0xBF80u : (x > 0 ? 0x3F80u : 0u);
        w |= b << (16 * j);
      }
      four[v] = w;
    }
  }
};

void decode_bf16_tq2(const WeightView& w, int64_t n0, int64_t rows, uint8_t* panel) {
  static const PairLut lut;
  auto* pairs = reinterpret_cast<uint32_t*>(panel);
  float* d = reinterpret_cast<float*>(panel + w.K * kNr * 2);
  const int64_t groups = w.K / kGroup;
  for (int64_t r = 0; r < kNr; ++r) {
    if (r >= rows) {
      for (int64_t p = 0; p < w.K / 2; ++p) pairs[p * kNr + r] = 0;
      for (int64_t g = 0; g < groups; ++g) d[g * kNr + r] = 0.0f;
      continue;
    }
    const auto* blocks = reinterpret_cast<const BlockTq2*>(w.data + (n0 + r) * w.row_bytes);
    for (int64_t g = 0; g < groups; ++g) {
      d[g * kNr + r] = f16_to_f32(blocks[g].d);
      uint32_t* out = pairs + (g * kGroup / 2) * kNr + r;
      for (int b = 0; b < 32; ++b) {
        const uint64_t v = lut.four[blocks[g].qs[b]];
        out[(2 * b) * kNr] = uint32_t(v);
        out[(2 * b + 1) * kNr] = uint32_t(v >> 32);
      }
    }
  }
}

// act: three bf16 planes [3][rows][lda] (hi, mid, lo) of the prepared chunk.
void tile_tq2_exact(const TileArgs& a) {
  const int rows = int(a.mr);
  configure(rows);
  const auto* plane0 = static_cast<const uint16_t*>(a.act);
  const int64_t plane = a.lda * a.act_rows;
  const uint16_t* x = plane0 + a.m0 * a.lda + a.k0;
  const uint8_t* codes = a.panel + (a.k0 / 2) * kNr * 4;
  const float* dp = reinterpret_cast<const float*>(a.panel + a.K * kNr * 2) + (a.k0 / kGroup) * kNr;
  const __mmask16 mk0 = lane_mask(a.nvalid), mk1 = lane_mask(a.nvalid - 16);
  float* y = a.y + a.m0 * a.ldy + a.n0;
  alignas(64) float c0[kMr][16], c1[kMr][16];
  alignas(64) float f[kMr][kNr];
  load_accumulators(a, y, mk0, mk1, f);
  const int64_t stride = a.lda * 2;
  for (int64_t g = 0; g < a.kc / kGroup; ++g) {
    _tile_zero(0);
    _tile_zero(1);
    for (int h = 0; h < 4; ++h) {  // four 32-deep steps per 128-group
      const int64_t k = g * kGroup + h * 32;
      const uint8_t* b = codes + (k / 2) * kNr * 4;  // k-pair rows of 128 bytes
      _tile_loadd(3, b, kNr * 4);
      _tile_loadd(4, b + 64, kNr * 4);
      for (int p = 0; p < 3; ++p) {
        _tile_loadd(2, x + p * plane + k, stride);
        _tile_dpbf16ps(0, 2, 3);
        _tile_dpbf16ps(1, 2, 4);
      }
    }
    _tile_stored(0, c0, 64);
    _tile_stored(1, c1, 64);
    const __m512 d0 = _mm512_load_ps(dp + g * kNr), d1 = _mm512_load_ps(dp + g * kNr + 16);
    for (int i = 0; i < rows; ++i) {
      _mm512_store_ps(f[i], _mm512_fmadd_ps(_mm512_load_ps(c0[i]), d0, _mm512_load_ps(f[i])));
      _mm512_store_ps(f[i] + 16, _mm512_fmadd_ps(_mm512_load_ps(c1[i]), d1, _mm512_load_ps(f[i] + 16)));
    }
  }
  const __m512 b0 = a.last && a.bias ? _mm512_maskz_loadu_ps(mk0, a.bias + a.n0) : _mm512_setzero_ps();
  const __m512 b1 = a.last && a.bias ? _mm512_maskz_loadu_ps(mk1, a.bias + a.n0 + 16) : _mm512_setzero_ps();
  for (int i = 0; i < rows; ++i) {
    _mm512_mask_storeu_ps(y + i * a.ldy, mk0, _mm512_add_ps(_mm512_load_ps(f[i]), b0));
    _mm512_mask_storeu_ps(y + i * a.ldy + 16, mk1, _mm512_add_ps(_mm512_load_ps(f[i] + 16), b1));
  }
}

}  // namespace

void prep_bf16x3_rows(const float* x, int64_t rows, int64_t K, int64_t lda, int64_t plane, uint16_t* out) {
  for (int64_t r = 0; r < rows; ++r) {
    const float* xr = x + r * K;
    uint16_t* hi = out + r * lda;
    uint16_t* mid = hi + plane;
    uint16_t* lo = mid + plane;
    int64_t k = 0;
    for (; k + 16 <= K; k += 16) {
      const __m512 v = _mm512_loadu_ps(xr + k);
      const __m256bh h = _mm512_cvtneps_pbh(v);
      const __m512 r1 = _mm512_sub_ps(v, _mm512_cvtpbh_ps(h));
      const __m256bh m = _mm512_cvtneps_pbh(r1);
      const __m512 r2 = _mm512_sub_ps(r1, _mm512_cvtpbh_ps(m));
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(hi + k), (__m256i)h);
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(mid + k), (__m256i)m);
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(lo + k), (__m256i)_mm512_cvtneps_pbh(r2));
    }
    for (; k < K; ++k) {
      const uint16_t h = f32_to_bf16(xr[k]);
      const float r1 = xr[k] - bf16_to_f32(h);
      const uint16_t m = f32_to_bf16(r1);
      hi[k] = h;
      mid[k] = m;
      lo[k] = f32_to_bf16(r1 - bf16_to_f32(m));
    }
  }
}

const KernelSet* exact_kernels(DType dtype) {
  if (dtype != DType::kTQ2_0_G128) return nullptr;
  static const KernelSet set{PanelKind::kBf16x3, kNr,           kMr, 1024, kGroup, panel_bytes_bf16,
                             decode_bf16_tq2,    tile_tq2_exact};
  return &set;
}

const KernelSet* kernels(DType dtype, PanelKind kind) {
  if (dtype != DType::kTQ2_0_G128 || kind != PanelKind::kI8) return nullptr;
  // Same sub-panel (and decoder) as the AVX-512 VNNI kernel; the k block must be whole groups.
  static const KernelSet set = [] {
    const KernelSet* base = avx512::kernels(DType::kTQ2_0_G128, PanelKind::kI8);
    KernelSet s = *base;
    s.mr = kMr;
    s.tile = tile_tq2;
    s.slab = 0;  // the AMX tile loads x rows as they are (lda apart), 16 at a time
    s.kc = 1024;  // as tuned on Sapphire Rapids; the VNNI set's single k block is not measured there
    return s;
  }();
  static_assert(kNr == 32, "the AMX tile reads the AVX-512 sub-panel of 32 columns");
  return &set;
}

}  // namespace quill::quant::detail::amx
