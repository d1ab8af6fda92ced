// Exact tq2_0_g128 linear on AVX-512 VNNI without AMX: f32 activations as 22-bit integers per
// 128-group (a power-of-two scale per row and group, so every element keeps its bits down to
// 2^-22 of the group's largest), split into three signed byte digits, each multiplied by the
// ternary weights with VPDPBUSD. The three int32 dot products recombine exactly into the group's
// integer dot product, which is scaled once in f32. A VPDPBUSD does 64 multiply-adds against an
// FMA's 16, so three of them still beat f32 FMA; the result is as accurate as an f32 GEMM.
//
// Activation row layout (kI8x3), per row of x:
//   [K/128 groups][3 digits][128] int8   x[k] * 2^(21 - e_g) = X = d0 + 256 d1 + 65536 d2, |X| <= 2^22
//   float s[K/128]                       2^(e_g - 21): the group's scale (NaN when the group has NaN / Inf)
//   int32 sum[K/128]                     sum_k X[k] over the group
// Weight panel: [K/4][nr] u32 of four bytes w + 1 in {0, 1, 2} (VPDPBUSD's unsigned operand), then
// f32 d[K/128][nr]. With unsigned weights, dot(w + 1, X) - sum(X) = dot(w, X) exactly in int32.
// GCC 12 reports the intrinsics' internal _mm512_undefined_* values as maybe-uninitialized.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#include "core/avx512_intrinsics.h"

#include <array>
#include <cstring>

#include "quant/formats.h"
#include "quant/panel_avx512.h"
#include "quant/quant_kernels.h"

namespace quill::quant::detail::avx512 {

namespace {

constexpr int kNr = kPanelNr;
constexpr int kG = kTq2BlockSize;  // 128
constexpr int kMr = 3;             // 3 digits x 2 halves x 3 rows int32 + 6 f32 accumulators

// A tq2 code byte -> its four weights plus one, as bytes.
struct Tq2PlusOne {
  std::array<uint32_t, 256> word;
  Tq2PlusOne() {
    for (int v = 0; v < 256; ++v) {
      uint32_t wd = 0;
      for (int j = 0; j < 4; ++j) wd |= uint32_t(tq2_code_value((unsigned(v) >> (2 * j)) & 3u) + 1) << (8 * j);
      word[size_t(v)] = wd;
    }
  }
};

void decode_tq2_plus_one(const WeightView& w, int64_t n0, int64_t rows, uint8_t* panel) {
  static const Tq2PlusOne lut;
  const int64_t K = w.K, ng = K / kG;
  auto* codes = reinterpret_cast<uint32_t*>(panel);
  float* d = reinterpret_cast<float*>(panel + K * kNr);
  for (int64_t r = 0; r < kNr; ++r) {
    if (r >= rows) {  // w + 1 = 1 against d = 0: contributes nothing
      for (int64_t q = 0; q < K / 4; ++q) codes[q * kNr + r] = 0x01010101u;
      for (int64_t g = 0; g < ng; ++g) d[g * kNr + r] = 0.0f;
      continue;
    }
    const auto* blk = reinterpret_cast<const BlockTq2*>(w.data + (n0 + r) * w.row_bytes);
    for (int64_t g = 0; g < ng; ++g) {
      for (int b = 0; b < 32; ++b) codes[(g * 32 + b) * kNr + r] = lut.word[blk[g].qs[b]];
      d[g * kNr + r] = f16_to_f32(blk[g].d);
    }
  }
}

inline int32_t load_quad(const int8_t* p) {
  int32_t v;
  std::memcpy(&v, p, 4);
  return v;
}

// The group's exact integer dot product dot(w, X) = dot(w + 1, X) - sum(X).
inline __m512i combine(__m512i lo, __m512i mid, __m512i hi, __m512i sum) {
  const __m512i t = _mm512_add_epi32(_mm512_slli_epi32(hi, 16), _mm512_slli_epi32(mid, 8));
  return _mm512_sub_epi32(_mm512_add_epi32(t, lo), sum);
}

template <int MR>
void tile_i8x3(const TileArgs& a) {
  const int64_t ng = a.K / kG;
  const auto* xrow = static_cast<const int8_t*>(a.act) + a.m0 * a.lda;
  const auto* b = reinterpret_cast<const int32_t*>(a.panel) + (a.k0 / 4) * kNr;
  const float* dp = reinterpret_cast<const float*>(a.panel + a.K * kNr) + (a.k0 / kG) * kNr;
  const __mmask16 mk0 = lane_mask(a.nvalid), mk1 = lane_mask(a.nvalid - 16);
  float* y = a.y + a.m0 * a.ldy + a.n0;
  const int64_t lda = a.lda;
  __m512 f0[MR], f1[MR];
  load_tile<MR>(a, y, mk0, mk1, f0, f1);
  for (int64_t g = 0; g < a.kc / kG; ++g) {
    const int64_t ga = a.k0 / kG + g;  // absolute group
    const int8_t* xg = xrow + ga * 3 * kG;
    // lo/mid/hi digit sums, for the two 16-column halves
    __m512i lo0[MR], lo1[MR], mid0[MR], mid1[MR], hi0[MR], hi1[MR];
#pragma GCC unroll 8
    for (int i = 0; i < MR; ++i) lo0[i] = lo1[i] = mid0[i] = mid1[i] = hi0[i] = hi1[i] = _mm512_setzero_si512();
    for (int q = 0; q < kG / 4; ++q) {
      const __m512i b0 = _mm512_load_si512(b + q * kNr), b1 = _mm512_load_si512(b + q * kNr + 16);
#pragma GCC unroll 8
      for (int i = 0; i < MR; ++i) {
        const int8_t* xq = xg + i * lda + 4 * q;
        const __m512i v0 = _mm512_set1_epi32(load_quad(xq));
        lo0[i] = dpbusd(lo0[i], b0, v0);
        lo1[i] = dpbusd(lo1[i], b1, v0);
        const __m512i v1 = _mm512_set1_epi32(load_quad(xq + kG));
        mid0[i] = dpbusd(mid0[i], b0, v1);
        mid1[i] = dpbusd(mid1[i], b1, v1);
        const __m512i v2 = _mm512_set1_epi32(load_quad(xq + 2 * kG));
        hi0[i] = dpbusd(hi0[i], b0, v2);
        hi1[i] = dpbusd(hi1[i], b1, v2);
      }
    }
    b += (kG / 4) * kNr;
    const __m512 d0 = _mm512_load_ps(dp + g * kNr), d1 = _mm512_load_ps(dp + g * kNr + 16);
#pragma GCC unroll 8
    for (int i = 0; i < MR; ++i) {
      const int8_t* tail = xrow + i * lda + 3 * a.K;
      float sc;
      std::memcpy(&sc, tail + 4 * ga, 4);
      const __m512 vs = _mm512_set1_ps(sc);
      const __m512i vsum = _mm512_set1_epi32(load_quad(tail + 4 * ng + 4 * ga));
      f0[i] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(combine(lo0[i], mid0[i], hi0[i], vsum)), _mm512_mul_ps(d0, vs), f0[i]);
      f1[i] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(combine(lo1[i], mid1[i], hi1[i], vsum)), _mm512_mul_ps(d1, vs), f1[i]);
    }
  }
  store_tile<MR>(a, y, mk0, mk1, f0, f1);
}

void t_i8x3(const TileArgs& a) {
  switch (a.mr) {
    case 3:
      return tile_i8x3<3>(a);
    case 2:
      return tile_i8x3<2>(a);
    default:
      return tile_i8x3<1>(a);
  }
}

size_t pb_i8x3(int64_t K, int64_t g) { return panel_bytes_generic(PanelKind::kI8x3, kNr, K, g); }

// k blocks of 1024: unlike the other non-AMX sets (kWholeK), one block measured level here
// (docs/PERFORMANCE.md, "One k block").
const KernelSet kI8x3Tq2{PanelKind::kI8x3, kNr, kMr, 1024, kG, pb_i8x3, decode_tq2_plus_one, t_i8x3};

}  // namespace

const KernelSet* exact_i8_kernels(DType dtype) { return dtype == DType::kTQ2_0_G128 ? &kI8x3Tq2 : nullptr; }

void prep_i8x3_rows(const float* x, int64_t rows, int64_t K, int64_t lda, int8_t* out) {
  const int64_t ng = K / kG;
  const __m512 sign = _mm512_set1_ps(-0.0f);
  for (int64_t r = 0; r < rows; ++r) {
    const float* xr = x + r * K;
    int8_t* o = out + r * lda;
    float* scale = reinterpret_cast<float*>(o + 3 * K);  // 4-byte aligned: lda and 3K are multiples of 8
    int32_t* sums = reinterpret_cast<int32_t*>(o + 3 * K + 4 * ng);
    for (int64_t g = 0; g < ng; ++g) {
      const float* xg = xr + g * kG;
      __m512 vmax = _mm512_setzero_ps();
      __mmask16 bad = 0;
      for (int j = 0; j < kG; j += 16) {
        const __m512 v = _mm512_loadu_ps(xg + j);
        vmax = _mm512_max_ps(vmax, _mm512_andnot_ps(sign, v));
        bad |= _mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q);
      }
      const float amax = _mm512_reduce_max_ps(vmax);
      uint32_t bits;
      std::memcpy(&bits, &amax, 4);
      int e = int((bits >> 23) & 255u) - 127;  // floor(log2(amax)) for normal amax
      int8_t* dg = o + g * 3 * kG;
      if (bad || e == 128 || amax == 0.0f) {  // NaN / Inf make the group NaN; zeros make it zero
        std::memset(dg, 0, 3 * kG);
        scale[g] = (bad || e == 128) ? __builtin_nanf("") : 0.0f;
        sums[g] = 0;
        continue;
      }
      if (e < -105) e = -105;  // subnormal-sized groups: keep 2^(21 - e) a finite f32
      const uint32_t inv_bits = uint32_t(21 - e + 127) << 23, s_bits = uint32_t(e - 21 + 127) << 23;
      float inv, s;
      std::memcpy(&inv, &inv_bits, 4);
      std::memcpy(&s, &s_bits, 4);
      scale[g] = s;
      const __m512 vinv = _mm512_set1_ps(inv);
      __m512i vsum = _mm512_setzero_si512();
      for (int j = 0; j < kG; j += 16) {
        // x * 2^(21 - e) is exact; rounded to the nearest integer (even on ties) whatever MXCSR says.
        const __m512i X = _mm512_cvt_roundps_epi32(_mm512_mul_ps(_mm512_loadu_ps(xg + j), vinv),
                                                   _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
        vsum = _mm512_add_epi32(vsum, X);
        const __m512i d0 = _mm512_srai_epi32(_mm512_slli_epi32(X, 24), 24);
        const __m512i x1 = _mm512_srai_epi32(_mm512_sub_epi32(X, d0), 8);
        const __m512i d1 = _mm512_srai_epi32(_mm512_slli_epi32(x1, 24), 24);
        const __m512i d2 = _mm512_srai_epi32(_mm512_sub_epi32(x1, d1), 8);
        _mm_storeu_si128(reinterpret_cast<__m128i*>(dg + j), _mm512_cvtepi32_epi8(d0));
        _mm_storeu_si128(reinterpret_cast<__m128i*>(dg + kG + j), _mm512_cvtepi32_epi8(d1));
        _mm_storeu_si128(reinterpret_cast<__m128i*>(dg + 2 * kG + j), _mm512_cvtepi32_epi8(d2));
      }
      sums[g] = _mm512_reduce_add_epi32(vsum);
    }
  }
}

}  // namespace quill::quant::detail::avx512
