// Per-instruction-set kernels behind the ops in ops.h. Each namespace is compiled in its own file
// (*_avx512.cpp / *_avx2.cpp get the ISA flags); kernel_table.cpp alone chooses among them.
// Internal to src/backend/cpu: everything here is a building block, not an API.
#pragma once

#include <cstddef>
#include <cstdint>

#include "quill/dtype.h"

namespace quill::cpu {

// ---- linear ----
// Up to this many rows of x, linear runs the direct kernel (GemvFn) instead of a GEMM.
inline constexpr int64_t kLinearSmallM = 16;
// dst[n] = float(src[n]) for a row of f16 / bf16 (exact conversion).
using DecodeFn = void (*)(const void* src, float* dst, int64_t n);
// Few-rows linear straight from the stored weights (no decoded copy): for the rows n in [n0, n1)
// of W [N, K], y[m * ldy + n] = x[m, :] . W[n, :] + (bias ? bias[n] : 0) for m < M <= kLinearSmallM,
// where GEMM packing does not pay off and the weights are read from memory once.
using GemvFn = void (*)(const float* x, int64_t M, int64_t K, const void* W, const float* bias, int64_t n0, int64_t n1,
                        float* y, int64_t ldy);
// The linear kernels for one weight dtype: f32 has only gemv (its GEMM is sgemm on W as stored),
// f16 / bf16 both; other dtypes none.
struct LinearKernels {
  DecodeFn decode = nullptr;
  GemvFn gemv = nullptr;
};

// ---- activations ----
using UnaryFn = void (*)(float* x, int64_t n);  // in place

// ---- attention ----
struct AttentionArgs {
  const float* q;
  const float* k;
  const float* v;
  float* out;
  int64_t B, Sq, Skv, H, Dh;
  float scale;
};
// Query tile (the SIMD lanes of every tile kernel) and key tile.
inline constexpr int64_t kAttnQTile = 64;
inline constexpr int64_t kAttnKTile = 128;
// Floats one thread needs: its tile (Q^T, O^T, S^T) and one head's K and V, packed by
// AttentionPackFn (the packed copies pad Dh by at most 8), rounded to 64 bytes.
inline int64_t attention_thread_scratch_floats(int64_t Skv, int64_t Dh) {
  const int64_t n = (2 * Dh + kAttnKTile) * kAttnQTile + Skv * (2 * Dh + 8);
  return (n + 15) / 16 * 16;
}
inline int64_t attention_query_tiles(int64_t Sq) { return (Sq + kAttnQTile - 1) / kAttnQTile; }
// Copies head bh = b * H + h of K and V into the thread's scratch, in the layout its tile kernel
// reads (contiguous, so the head streams from cache instead of 256-byte runs H * Dh floats apart).
using AttentionPackFn = void (*)(const AttentionArgs& a, int64_t bh, float* scratch);
// Computes work item `item` = ((b * H) + h) * query_tiles + query_tile of the output, after the
// pack function (if any) has packed that item's head into the same scratch.
using AttentionTileFn = void (*)(const AttentionArgs& a, int64_t item, float* scratch);

namespace scalar {
LinearKernels linear_kernels(DType dtype);
void gelu_tanh(float* x, int64_t n);
void silu(float* x, int64_t n);
void attention_tile(const AttentionArgs& a, int64_t item, float* scratch);
}  // namespace scalar

namespace avx2 {
LinearKernels linear_kernels(DType dtype);
void gelu_tanh(float* x, int64_t n);
void silu(float* x, int64_t n);
void attention_pack_head(const AttentionArgs& a, int64_t bh, float* scratch);
void attention_tile(const AttentionArgs& a, int64_t item, float* scratch);
}  // namespace avx2

namespace avx512 {
LinearKernels linear_kernels(DType dtype);
void gelu_tanh(float* x, int64_t n);
void silu(float* x, int64_t n);
void attention_pack_head(const AttentionArgs& a, int64_t bh, float* scratch);
void attention_tile(const AttentionArgs& a, int64_t item, float* scratch);
}  // namespace avx512

}  // namespace quill::cpu
