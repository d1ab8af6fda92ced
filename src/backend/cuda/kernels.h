// Launchers for Quill's CUDA kernels. Every pointer is a DEVICE pointer and every launch goes to
// `stream`, so the same launchers serve today's host-staged ops (cuda_backend.cpp copies in and
// out around them) and tomorrow's device-resident activations planned by the runtime. Launchers
// only enqueue: they return the launch error (cudaGetLastError) and never synchronise.
//
// bf16 and f16 buffers are passed as their bit patterns (uint16_t) so host code needs no CUDA
// half-precision headers. Shapes follow the CPU ops in backend/cpu/ops.h exactly.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

namespace quill::cuda {

// ---- conversions and element-wise ops (elementwise.cu) ----
cudaError_t f32_to_bf16(const float* in, uint16_t* out, int64_t n, cudaStream_t stream);
cudaError_t f16_to_bf16(const uint16_t* in, uint16_t* out, int64_t n, cudaStream_t stream);
// y[m, n] += bias[n] for y [M, N].
cudaError_t add_bias(float* y, const float* bias, int64_t M, int64_t N, cudaStream_t stream);
cudaError_t gelu_tanh(float* x, int64_t n, cudaStream_t stream);  // in place
cudaError_t silu(float* x, int64_t n, cudaStream_t stream);       // in place
// x[b, s, :] += gate[b * gate_stride + :] * y[b, s, :]
cudaError_t gated_residual(float* x, const float* y, const float* gate, int64_t B, int64_t S, int64_t D,
                           int64_t gate_stride, cudaStream_t stream);

// ---- row normalisations (norm.cu); y may equal x ----
// y = (x - mean) * rstd (* w) (+ b); w, b may be null.
cudaError_t layer_norm(const float* x, float* y, int64_t rows, int64_t D, float eps, const float* w, const float* b,
                       cudaStream_t stream);
// adaLN: y[b, s, :] = LN(x[b, s, :]) * (1 + scale[b * mod_stride + :]) + shift[b * mod_stride + :]
cudaError_t layer_norm_modulate(const float* x, float* y, int64_t B, int64_t S, int64_t D, float eps,
                                const float* shift, const float* scale, int64_t mod_stride, cudaStream_t stream);
cudaError_t rms_norm(const float* x, float* y, int64_t rows, int64_t D, float eps, const float* w, cudaStream_t stream);

// ---- ternary W2A16 GEMM (ternary_gemm.cu) ----
// y[M, N] = x[M, K] . dequant(W)[N, K]^T (+ bias[N]); x bf16 [M, K] row-major; W in the layout
// of tq2_layout.h (codes [K/128][N][32] bytes, scales [K/128][N] f16). K % 128 == 0; M, N any.
cudaError_t ternary_gemm(const uint16_t* x_bf16, const uint8_t* codes, const uint16_t* scales_f16, const float* bias,
                         float* y, int64_t M, int64_t N, int64_t K, cudaStream_t stream);

// ---- attention (flash_attention.cu) ----
// q [B, Sq, H, Dh], k, v [B, Skv, H, Dh] bf16; out [B, Sq, H, Dh] f32. Dh must be 64 or 128.
cudaError_t flash_attention_bf16(const uint16_t* q, const uint16_t* k, const uint16_t* v, float* out, int64_t B,
                                 int64_t Sq, int64_t Skv, int64_t H, int64_t Dh, float scale, cudaStream_t stream);
bool flash_attention_supports(int64_t Dh);
// The same op in f32 for any Dh <= 256: one warp per query row. For small models (and as a check
// on the bf16 kernel), not for speed.
cudaError_t attention_f32(const float* q, const float* k, const float* v, float* out, int64_t B, int64_t Sq,
                          int64_t Skv, int64_t H, int64_t Dh, float scale, cudaStream_t stream);
inline constexpr int64_t kAttentionF32MaxHeadDim = 256;

}  // namespace quill::cuda
