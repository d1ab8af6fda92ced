// AVX2 panel kernels for quant_linear: the exact (f32 FMA) path for every weight type, and
// tq2_0_g128 A8 on VPMADDUBSW (no VNNI at this level; kernel in quant_tq2_a8_avx2.cpp). The other
// A8 modes use the scalar reference here.
#include <immintrin.h>

#include <algorithm>
#include <cstring>

#include "backend/cpu/kernels.h"
#include "quant/formats.h"
#include "quant/panel_avx2.h"
#include "quant/quant_kernels.h"

namespace quill::quant::detail::avx2 {

namespace {

constexpr int kNr = kPanelNr;
constexpr int kMr = 6;

// Row n, elements [k0, k0 + len), to f32: f32 by a copy, f16 and bf16 by linear.cpp's AVX2 row
// decode (F16C / a shift), q8_0 and tq2 per block (the scalar decoders' one rounding); fp8 by the
// scalar decoder. len is a multiple of the block, or the row's tail.
void decode_chunk(const WeightView& w, int64_t n, int64_t k0, int64_t len, float* out) {
  const uint8_t* row = w.data + n * w.row_bytes;
  if (w.dtype == DType::kF32) {
    std::memcpy(out, row + k0 * 4, size_t(len) * 4);
    return;
  }
  if (w.dtype == DType::kF16 || w.dtype == DType::kBF16) {
    cpu::avx2::linear_kernels(w.dtype).decode(row + k0 * 2, out, len);
    return;
  }
  int64_t k = 0;
  if (w.dtype == DType::kQ8_0) {  // q * d per 32-block, the scalar decoder's one rounding
    const auto* blk = reinterpret_cast<const BlockQ8_0*>(row) + k0 / kQ8BlockSize;
    for (; k + kQ8BlockSize <= len; k += kQ8BlockSize, ++blk) {
      const __m256 d = _mm256_set1_ps(f16_to_f32(blk->d));
      for (int j = 0; j < kQ8BlockSize; j += 8) {
        const __m128i q = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(blk->qs + j));
        _mm256_store_ps(out + k + j, _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(q)), d));
      }
    }
  }
  if (w.dtype == DType::kTQ2_0_G128) {  // value(code) * d per 128-block, as the scalar decoder
    const auto* blk = reinterpret_cast<const BlockTq2*>(row) + k0 / kTq2BlockSize;
    const __m256 lut = _mm256_setr_ps(float(tq2_code_value(0)), float(tq2_code_value(1)), float(tq2_code_value(2)),
                                      float(tq2_code_value(3)), 0.0f, 0.0f, 0.0f, 0.0f);
    const __m256i shifts = _mm256_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14);
    const __m256i code_mask = _mm256_set1_epi32((1 << kTq2CodeBits) - 1);
    for (; k + kTq2BlockSize <= len; k += kTq2BlockSize, ++blk) {
      const __m256 d = _mm256_set1_ps(f16_to_f32(blk->d));
      for (int j = 0; j < kTq2BlockSize; j += 8) {  // weights j..j+7: the two bytes qs[j/4], qs[j/4 + 1]
        uint16_t two;
        std::memcpy(&two, blk->qs + j / kTq2CodesPerByte, sizeof(two));
        const __m256i codes = _mm256_and_si256(_mm256_srlv_epi32(_mm256_set1_epi32(two), shifts), code_mask);
        _mm256_store_ps(out + k + j, _mm256_mul_ps(_mm256_permutevar8x32_ps(lut, codes), d));
      }
    }
  }
  if (k < len) decode_row_chunk_f32(w, n, k0 + k, len - k, out + k);
}

// c[j] <- element j of every row r[0..7] (an 8 x 8 transpose).
inline void transpose8(__m256 r[8]) {
  const __m256 t0 = _mm256_unpacklo_ps(r[0], r[1]), t1 = _mm256_unpackhi_ps(r[0], r[1]);
  const __m256 t2 = _mm256_unpacklo_ps(r[2], r[3]), t3 = _mm256_unpackhi_ps(r[2], r[3]);
  const __m256 t4 = _mm256_unpacklo_ps(r[4], r[5]), t5 = _mm256_unpackhi_ps(r[4], r[5]);
  const __m256 t6 = _mm256_unpacklo_ps(r[6], r[7]), t7 = _mm256_unpackhi_ps(r[6], r[7]);
  const __m256 u0 = _mm256_shuffle_ps(t0, t2, 0x44), u1 = _mm256_shuffle_ps(t0, t2, 0xEE);
  const __m256 u2 = _mm256_shuffle_ps(t1, t3, 0x44), u3 = _mm256_shuffle_ps(t1, t3, 0xEE);
  const __m256 u4 = _mm256_shuffle_ps(t4, t6, 0x44), u5 = _mm256_shuffle_ps(t4, t6, 0xEE);
  const __m256 u6 = _mm256_shuffle_ps(t5, t7, 0x44), u7 = _mm256_shuffle_ps(t5, t7, 0xEE);
  r[0] = _mm256_permute2f128_ps(u0, u4, 0x20);
  r[1] = _mm256_permute2f128_ps(u1, u5, 0x20);
  r[2] = _mm256_permute2f128_ps(u2, u6, 0x20);
  r[3] = _mm256_permute2f128_ps(u3, u7, 0x20);
  r[4] = _mm256_permute2f128_ps(u0, u4, 0x31);
  r[5] = _mm256_permute2f128_ps(u1, u5, 0x31);
  r[6] = _mm256_permute2f128_ps(u2, u6, 0x31);
  r[7] = _mm256_permute2f128_ps(u3, u7, 0x31);
}

// panel[k][r] = W[n0 + r][k] for r < 16 (zero past `rows`): rows decoded a chunk at a time, then
// 8 x 8 transposes. Exact for every dtype (pure conversions and moves).
void decode_f32(const WeightView& w, int64_t n0, int64_t rows, uint8_t* panel) {
  float* out = reinterpret_cast<float*>(panel);
  constexpr int64_t kChunk = 128;
  alignas(32) float tile[kNr][kChunk];
  for (int64_t k0 = 0; k0 < w.K; k0 += kChunk) {
    const int64_t len = std::min(kChunk, w.K - k0);
    for (int64_t r = 0; r < kNr; ++r) {
      if (r < rows)
        decode_chunk(w, n0 + r, k0, len, tile[r]);
      else
        std::memset(tile[r], 0, sizeof(tile[r]));
    }
    int64_t k = 0;
    for (; k + 8 <= len; k += 8)
      for (int h = 0; h < 2; ++h) {
        __m256 v[8];
        for (int i = 0; i < 8; ++i) v[i] = _mm256_load_ps(tile[h * 8 + i] + k);
        transpose8(v);
        for (int j = 0; j < 8; ++j) _mm256_store_ps(out + (k0 + k + j) * kNr + h * 8, v[j]);
      }
    for (; k < len; ++k)
      for (int64_t r = 0; r < kNr; ++r) out[(k0 + k) * kNr + r] = tile[r][k];
  }
}

// One k step of the full 6 x 16 tile: c0[i] += x[k][i] * panel[k][0..7], c1[i] += x[k][i] *
// panel[k][8..15] for the slab's 6 rows (x[k][0..5] contiguous), at byte offsets XO into the slab
// and BO into the panel.
// clang-format off
#define QUILL_FMA_STEP_6X16(XO, BO)                 \
  "vmovaps " BO "(%[b]), %%ymm12\n\t"              \
  "vmovaps " BO "+32(%[b]), %%ymm13\n\t"           \
  "vbroadcastss " XO "(%[x]), %%ymm14\n\t"         \
  "vfmadd231ps %%ymm12, %%ymm14, %%ymm0\n\t"       \
  "vfmadd231ps %%ymm13, %%ymm14, %%ymm6\n\t"       \
  "vbroadcastss " XO "+4(%[x]), %%ymm15\n\t"       \
  "vfmadd231ps %%ymm12, %%ymm15, %%ymm1\n\t"       \
  "vfmadd231ps %%ymm13, %%ymm15, %%ymm7\n\t"       \
  "vbroadcastss " XO "+8(%[x]), %%ymm14\n\t"       \
  "vfmadd231ps %%ymm12, %%ymm14, %%ymm2\n\t"       \
  "vfmadd231ps %%ymm13, %%ymm14, %%ymm8\n\t"       \
  "vbroadcastss " XO "+12(%[x]), %%ymm15\n\t"      \
  "vfmadd231ps %%ymm12, %%ymm15, %%ymm3\n\t"       \
  "vfmadd231ps %%ymm13, %%ymm15, %%ymm9\n\t"       \
  "vbroadcastss " XO "+16(%[x]), %%ymm14\n\t"      \
  "vfmadd231ps %%ymm12, %%ymm14, %%ymm4\n\t"       \
  "vfmadd231ps %%ymm13, %%ymm14, %%ymm10\n\t"      \
  "vbroadcastss " XO "+20(%[x]), %%ymm15\n\t"      \
  "vfmadd231ps %%ymm12, %%ymm15, %%ymm5\n\t"       \
  "vfmadd231ps %%ymm13, %%ymm15, %%ymm11\n\t"
// clang-format on

// The full 6 x 16 tile's k loop over one slab (k = 0 .. kc-1 in order; four steps per
// iteration, then single steps). In assembly because GCC, short of registers (12 accumulators,
// 2 panel vectors and the broadcast take 15 of 16), shuffled accumulators between registers
// every step; the accumulators pass through memory once per call. Same FMAs in the same order as
// the intrinsic loop for the other tile heights, so a row's result does not depend on the tile it
// lands in (batch-invariant).
inline void fma_loop_6x16(const float* x, const float* b, int64_t kc, __m256* c0, __m256* c1) {
  if (kc <= 0) return;
  int64_t n4 = kc / 4, n1 = kc % 4;
  __asm__ volatile(
      "vmovaps 0(%[c0]), %%ymm0\n\t"
      "vmovaps 32(%[c0]), %%ymm1\n\t"
      "vmovaps 64(%[c0]), %%ymm2\n\t"
      "vmovaps 96(%[c0]), %%ymm3\n\t"
      "vmovaps 128(%[c0]), %%ymm4\n\t"
      "vmovaps 160(%[c0]), %%ymm5\n\t"
      "vmovaps 0(%[c1]), %%ymm6\n\t"
      "vmovaps 32(%[c1]), %%ymm7\n\t"
      "vmovaps 64(%[c1]), %%ymm8\n\t"
      "vmovaps 96(%[c1]), %%ymm9\n\t"
      "vmovaps 128(%[c1]), %%ymm10\n\t"
      "vmovaps 160(%[c1]), %%ymm11\n\t"
      "test %[n4], %[n4]\n\t"
      "jz 2f\n\t"
      "1:\n\t"
      QUILL_FMA_STEP_6X16("0", "0")
      QUILL_FMA_STEP_6X16("24", "64")
      QUILL_FMA_STEP_6X16("48", "128")
      QUILL_FMA_STEP_6X16("72", "192")
      "add $256, %[b]\n\t"
      "add $96, %[x]\n\t"
      "dec %[n4]\n\t"
      "jnz 1b\n\t"
      "2:\n\t"
      "test %[n1], %[n1]\n\t"
      "jz 4f\n\t"
      "3:\n\t"
      QUILL_FMA_STEP_6X16("0", "0")
      "add $64, %[b]\n\t"
      "add $24, %[x]\n\t"
      "dec %[n1]\n\t"
      "jnz 3b\n\t"
      "4:\n\t"
      "vmovaps %%ymm0, 0(%[c0])\n\t"
      "vmovaps %%ymm1, 32(%[c0])\n\t"
      "vmovaps %%ymm2, 64(%[c0])\n\t"
      "vmovaps %%ymm3, 96(%[c0])\n\t"
      "vmovaps %%ymm4, 128(%[c0])\n\t"
      "vmovaps %%ymm5, 160(%[c0])\n\t"
      "vmovaps %%ymm6, 0(%[c1])\n\t"
      "vmovaps %%ymm7, 32(%[c1])\n\t"
      "vmovaps %%ymm8, 64(%[c1])\n\t"
      "vmovaps %%ymm9, 96(%[c1])\n\t"
      "vmovaps %%ymm10, 128(%[c1])\n\t"
      "vmovaps %%ymm11, 160(%[c1])\n\t"
      : [b] "+r"(b), [x] "+r"(x), [n4] "+r"(n4), [n1] "+r"(n1)
      : [c0] "r"(c0), [c1] "r"(c1)
      : "xmm0", "xmm1", "xmm2", "xmm3", "xmm4", "xmm5", "xmm6", "xmm7", "xmm8", "xmm9", "xmm10", "xmm11", "xmm12",
        "xmm13", "xmm14", "xmm15", "cc", "memory");
}
#undef QUILL_FMA_STEP_6X16

// Activations arrive in slabs of kMr rows (quant_kernels.h): the tile's rows at x[k * kMr + i].
// Locals for every TileArgs field used after the asm (its "memory" clobber would reload them).
template <int MR>
void tile_f32(const TileArgs& a) {
  const float* x = reinterpret_cast<const float*>(slab_tile_start(a, kMr, 1));
  const float* b = reinterpret_cast<const float*>(a.panel) + a.k0 * kNr;
  const int64_t ldy = a.ldy;
  const TileColumns cols = tile_columns(a.nvalid);
  float* y = a.y + a.m0 * ldy + a.n0;
  __m256 c0[MR], c1[MR];
  load_tile<MR>(a.first, y, ldy, cols, c0, c1);
  __m256 bias0, bias1;
  load_bias(a.last ? a.bias : nullptr, a.n0, cols, bias0, bias1);
  const int64_t kc = a.kc;  // a local: a.kc reloaded every iteration costs a memory operand
  if constexpr (MR == kMr) {
    fma_loop_6x16(x, b, kc, c0, c1);
  } else {
    for (int64_t k = 0; k < kc; ++k) {
      const __m256 b0 = _mm256_load_ps(b + k * kNr), b1 = _mm256_load_ps(b + k * kNr + 8);
#pragma GCC unroll 8
      for (int i = 0; i < MR; ++i) {
        const __m256 xv = _mm256_broadcast_ss(x + k * kMr + i);
        c0[i] = _mm256_fmadd_ps(xv, b0, c0[i]);
        c1[i] = _mm256_fmadd_ps(xv, b1, c1[i]);
      }
    }
  }
#pragma GCC unroll 8
  for (int i = 0; i < MR; ++i) {  // + 0 without a bias or before the last block, as always
    c0[i] = _mm256_add_ps(c0[i], bias0);
    c1[i] = _mm256_add_ps(c1[i], bias1);
  }
  store_tile<MR>(y, ldy, cols, c0, c1);
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

const KernelSet kF32{PanelKind::kF32, kNr, kMr, kWholeK, 1, pb_f32, decode_f32, tile, kMr};

}  // namespace

const KernelSet* kernels(DType dtype, PanelKind kind) {
  if (kind == PanelKind::kI8) return i8_kernels(dtype);
  return kind == PanelKind::kF32 ? &kF32 : nullptr;
}

}  // namespace quill::quant::detail::avx2
