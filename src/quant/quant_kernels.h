// Internal: the panel kernels behind quant_linear. A "sub-panel" is `nr` consecutive weight rows
// decoded once into a layout the micro-kernel streams (zero-padded past N), reused for all rows
// of x. Panel kinds:
//   kF32     [K][nr] f32: weight (n, k) at k * nr + n.
//   kBf16    [K/2][nr][2] bf16: the pair (k, k+1) of column n at (k/2 * nr + n) * 2.
//   kI8      [K/4][nr][4] int8 codes, then f32 d[K/G][nr] (group scales), then f32 c[nr] where
//            c[n] = 128 * sum_g d[g][n] * sum_{k in g} w[n, k] (the correction for u8 activations).
//   kI8x3    [K/4][nr][4] u8 codes w + 1 (tq2), then f32 d[K/G][nr].
// Activations: kF32 reads x as is; kBf16 reads x rounded to bf16 [M][K]; kI8 reads
// u8 = q + 128 [M][K] with q = round(x / s), s = absmax / 127 per row (scale array beside);
// where a kF32, kBf16 or kI8 kernel set has a `slab`, the driver packs those rows into slabs of
// `slab` rows, 4-byte units (an f32, a bf16 pair (k, k + 1), or a quad of 4 u8: K % 4 == 0)
// interleaved: unit u of row i of slab t at (t * U + u) * slab + i, U = K (f32), K / 2 (pairs) or
// K / 4 (quads), rows past M zero. One micro-tile's rows are then one contiguous stream;
// kI8x3 reads x as three int8 digit planes per 128-group with a scale and a sum per group (the
// exact mode on AVX-512 VNNI without AMX; layout in quant_exact_i8_avx512.cpp).
#pragma once

#include <cstddef>
#include <cstdint>

#include "quill/dtype.h"

namespace quill::quant::detail {

// kBf16x3 (AMX exact mode): x as three bf16 planes hi/mid/lo with hi + mid + lo == x.
enum class PanelKind { kF32, kBf16, kI8, kBf16x3, kI8x3 };

struct WeightView {
  DType dtype;
  const uint8_t* data;
  int64_t N, K;
  int64_t row_bytes;
  const float* row_scale;  // fp8 only
};

struct TileArgs {
  const void* act;  // activation rows (f32, bf16 or u8), row stride lda elements
  int64_t lda;
  const float* act_scale;  // kI8: per-row scale, indexed by absolute row m
  int64_t m0, mr;          // rows [m0, m0 + mr) (absolute, relative to act/act_scale base)
  int64_t act_rows;        // kBf16x3: rows per plane (planes are act_rows * lda elements apart)
  const uint8_t* panel;    // the sub-panel (whole K)
  int64_t K, k0, kc;       // k block [k0, k0 + kc)
  float* y;                // output rows base (row m at y + m * ldy)
  int64_t ldy;
  int64_t n0, nvalid;  // columns [n0, n0 + nvalid), nvalid <= nr
  const float* bias;   // may be null
  bool first, last;    // first k block: start from 0; last: apply bias / scales
};

// Where a micro-tile's rows start in slab-packed activations (see the top): the first byte of unit
// k0 / k_per_unit of the slab holding row m0, k_per_unit 1 (f32 units) or 4 (u8 quads). Internal
// linkage: the ISA-flagged kernel files call it, and none of their code may be shared.
namespace {
inline const uint8_t* slab_tile_start(const TileArgs& a, int slab, int k_per_unit) {
  return static_cast<const uint8_t*>(a.act) + (a.m0 / slab * (a.K / k_per_unit) + a.k0 / k_per_unit) * slab * 4;
}
}  // namespace

// A k block as long as any K. The panels hold the whole K anyway; each extra block gives every tile
// a fresh start (output rows reloaded, activation streams restarted): on Zen 4 one block was
// 6-9 % faster at K = 3072 (A/B) and up to 23 % at K = 14336 (a block-length sweep; f16);
// docs/PERFORMANCE.md, "One k block".
constexpr int64_t kWholeK = int64_t(1) << 40;

// The AVX-512 sets' pass budget (KernelSet::pass_bytes; docs/PERFORMANCE.md, "Passes by bytes").
constexpr size_t kWidePassBytes = size_t(64) << 20;

struct KernelSet {
  PanelKind kind;
  int nr;         // columns per sub-panel
  int mr;         // rows per micro-tile (tile accepts any mr in [1, this])
  int64_t kc;     // k block (a multiple of the group for kI8); kWholeK: all of K in one block
  int64_t group;  // kI8: k per scale group
  size_t (*panel_bytes)(int64_t K, int64_t group);
  void (*decode)(const WeightView& w, int64_t n0, int64_t rows, uint8_t* panel);
  void (*tile)(const TileArgs& a);
  int slab = 0;  // kF32 / kI8: rows per activation slab (see the top; at most 16); 0: rows as they are
  // Slab-packed or bf16 activation bytes per row pass (quant_linear.cpp, rows_per_pass). Larger
  // passes decode the weights fewer times, but stream x from memory rather than L3: worth it for
  // the AVX-512 tiles (12 x 32, kWidePassBytes), a loss for the AVX2 ones (6 x 16, twice the x
  // bytes per FMA).
  size_t pass_bytes = size_t(8) << 20;
  // Panels that are the weight's own bytes permuted (no bigger): decoded once per weight and kept
  // instead of per call (prepacked_panels.h).
  bool prepack = false;
};

// Tests only: every kernel set runs k blocks of `kc` (a multiple of 128: whole groups and pairs for
// every set) instead of its own; 0 restores them. Most sets take K whole, but their tiles keep the
// block logic (the AMX sets use blocks), and this keeps it tested everywhere.
void set_k_block_for_tests(int64_t kc);
// Tests only: the byte budget of one pass of slab-packed or bf16 activation rows (0 restores it),
// so a test can span several passes without a huge x.
void set_pass_bytes_for_tests(size_t bytes);

size_t panel_bytes_generic(PanelKind kind, int nr, int64_t K, int64_t group);
// Scalar: row n of W, elements [k0, k0 + len) (block-aligned) decoded exactly to f32.
void decode_row_chunk_f32(const WeightView& w, int64_t n, int64_t k0, int64_t len, float* out);
// The kI8 panel of tq2_0_g128 rows [n0, n0 + rows), `nr` columns wide (zero-padded past rows):
// shared by the AVX-512 (nr 32) and AVX2 (nr 16) kernels, built without ISA flags.
void decode_i8_tq2_panel(const WeightView& w, int64_t n0, int64_t rows, int nr, uint8_t* panel);
// Scalar activation preparation (the reference numerics).
void prep_i8_rows(const float* x, int64_t rows, int64_t K, uint8_t* out, float* scale);
void prep_bf16_rows(const float* x, int64_t rows, int64_t K, uint16_t* out);

// Per ISA: the kernel set for (weight dtype, activation kind), or null when that level has none.
namespace avx512 {
const KernelSet* kernels(DType dtype, PanelKind kind);
void prep_i8_rows(const float* x, int64_t rows, int64_t K, uint8_t* out, float* scale);  // same numerics
void prep_bf16_rows(const float* x, int64_t rows, int64_t K, uint16_t* out);
// Exact tq2_0_g128 on VNNI (kI8x3): the kernel set, and x rows into that layout (row stride lda bytes).
const KernelSet* exact_i8_kernels(DType dtype);
void prep_i8x3_rows(const float* x, int64_t rows, int64_t K, int64_t lda, int8_t* out);
}  // namespace avx512
namespace avx2 {
const KernelSet* kernels(DType dtype, PanelKind kind);
// tq2_0_g128 A8 (kI8) on VPMADDUBSW; null for other types. Same activations as the scalar prep.
const KernelSet* i8_kernels(DType dtype);
void prep_i8_rows(const float* x, int64_t rows, int64_t K, uint8_t* out, float* scale);
}  // namespace avx2
// AMX tiles for tq2_0_g128: A8 (int8) and exact (bf16x3).
namespace amx {
bool wanted();           // QUILL_AMX is not 0 / off
bool supported();        // the CPU has AMX-INT8 and the OS granted the tile state
bool supported_exact();  // also AMX-BF16 and AVX512_BF16
const KernelSet* kernels(DType dtype, PanelKind kind);
const KernelSet* exact_kernels(DType dtype);
void prep_bf16x3_rows(const float* x, int64_t rows, int64_t K, int64_t lda, int64_t plane, uint16_t* out);
}  // namespace amx

// How quant_linear runs one (weight dtype, mode) at one ISA level.
struct QuantPlan {
  PanelKind kind = PanelKind::kF32;    // activations as the kernels (or the reference) read them
  const KernelSet* kernels = nullptr;  // null: the scalar reference
  bool onednn = false;                 // bf16 x bf16 through oneDNN's matmul instead
};

// The quant_linear part of the CPU kernel table (filled in backend/cpu/kernel_table.cpp).
struct QuantKernels {
  QuantPlan plan[size_t(DType::kCount)][2];  // [weight dtype][QuantMode]
  void (*prep_i8_rows)(const float* x, int64_t rows, int64_t K, uint8_t* out, float* scale) = nullptr;
  void (*prep_bf16_rows)(const float* x, int64_t rows, int64_t K, uint16_t* out) = nullptr;
  // Set where some plan reads kBf16x3 activations.
  void (*prep_bf16x3_rows)(const float* x, int64_t rows, int64_t K, int64_t lda, int64_t plane,
                           uint16_t* out) = nullptr;
  // Set where some plan reads kI8x3 activations.
  void (*prep_i8x3_rows)(const float* x, int64_t rows, int64_t K, int64_t lda, int8_t* out) = nullptr;
  // f16 weights run the exact fused panel kernel (plan[kF16][kExact]) instead of f32 panels +
  // OpenBLAS sgemm: where that kernel is the faster of the two (docs/PERFORMANCE.md, "f16 and bf16
  // weights: the route a model takes").
  bool f16_fused = false;
};

}  // namespace quill::quant::detail
