// CPU operators on f32 activations, written llm.c style over raw pointers with shape comments.
// Weights may be any stored type (f32, f16, bf16 here; block-quantized types in quant/).
// No operator allocates: scratch memory comes from the caller (a plan's arena), sized by the
// matching *_scratch_* function.
#pragma once

#include <cstddef>
#include <cstdint>

#include "core/thread_pool.h"
#include "quill/tensor.h"

namespace quill::cpu {

// y[M, N] = x[M, K] . W[N, K]^T (+ bias[N]).  W: f32 / f16 / bf16 (contiguous [N, K]).
// bias: f32 or nullptr. `scratch` holds linear_scratch_floats(W, pool) floats (0 for f32 W).
size_t linear_scratch_floats(const Tensor& W, const ThreadPool& pool);
void linear(const float* x, int64_t M, const Tensor& W, const float* bias, float* y, float* scratch, ThreadPool& pool);

// y[r, :] = (x[r, :] - mean) / sqrt(var + eps) * w + b   (w, b may be null: no affine)
void layer_norm(const float* x, float* y, int64_t rows, int64_t D, float eps, const float* w, const float* b,
                ThreadPool& pool);
// adaLN: y[b, s, :] = LN(x[b, s, :]) * (1 + scale[b, :]) + shift[b, :]; LN without affine.
// x, y: [B, S, D]; shift/scale rows are `mod_stride` floats apart (chunks of one modulation vector).
void layer_norm_modulate(const float* x, float* y, int64_t B, int64_t S, int64_t D, float eps, const float* shift,
                         const float* scale, int64_t mod_stride, ThreadPool& pool);
// y[r, :] = x[r, :] / sqrt(mean(x^2) + eps) * w   (w may be null). In place allowed.
void rms_norm(const float* x, float* y, int64_t rows, int64_t D, float eps, const float* w, ThreadPool& pool);

void gelu_tanh(float* x, int64_t n, ThreadPool& pool);  // in place, PyTorch approximate="tanh"
void silu(float* x, int64_t n, ThreadPool& pool);       // in place
void relu(float* x, int64_t n, ThreadPool& pool);       // in place
// x[r, :] += y[r % y_rows, :] for r < rows.
void add_rows(float* x, const float* y, int64_t rows, int64_t D, int64_t y_rows, ThreadPool& pool);
// out[m, j] = silu(gate[m * ld + j]) * up[m * ld + j]; out rows F apart.
void swiglu(const float* gate, const float* up, int64_t ld, float* out, int64_t M, int64_t F, ThreadPool& pool);
// Rotary embedding in place on x [B, S, H, Dh]: pairs (2i, 2i + 1) of each head rotated by the
// table row of their token, cos/sin [S, pairs].
void rope(float* x, int64_t B, int64_t S, int64_t H, int64_t Dh, const float* cos, const float* sin, int64_t pairs,
          ThreadPool& pool);
// x[b, s, :] += gate[b, :] * y[b, s, :]; gate rows `gate_stride` apart.
void gated_residual(float* x, const float* y, const float* gate, int64_t B, int64_t S, int64_t D, int64_t gate_stride,
                    ThreadPool& pool);

// Multi-head, non-causal attention (flash style: tiled, online softmax, O(sequence) memory).
// q: [B, Sq, H, Dh], k, v: [B, Skv, H, Dh], out: [B, Sq, H, Dh], all contiguous.
// out = softmax(q k^T * scale) v per (batch, head). Threaded over (batch x head x query tile).
size_t attention_scratch_floats(int64_t Skv, int64_t Dh, const ThreadPool& pool);
void rope_half(float* x, int64_t B, int64_t S, int64_t H, int64_t Dh, const float* cos, const float* sin,
               ThreadPool& pool);
// OpBackend::masked_attention on the CPU (masked_attention.cpp): per (batch, head) a scores GEMM,
// a masked softmax and a P V GEMM; `scratch` holds one [S, S] score matrix.
size_t masked_attention_scratch_floats(int64_t S, const ThreadPool& pool);
void masked_attention(const float* q, const float* k, const float* v, float* out, int64_t B, int64_t S, int64_t H,
                      int64_t Hkv, int64_t Dh, float scale, const int32_t* valid, bool causal, float* scratch,
                      ThreadPool& pool);
void attention(const float* q, const float* k, const float* v, float* out, int64_t B, int64_t Sq, int64_t Skv,
               int64_t H, int64_t Dh, float scale, float* scratch, ThreadPool& pool);
// The textbook version (materialises the score row); the reference the flash kernel is tested against.
void attention_naive(const float* q, const float* k, const float* v, float* out, int64_t B, int64_t Sq, int64_t Skv,
                     int64_t H, int64_t Dh, float scale);

}  // namespace quill::cpu
