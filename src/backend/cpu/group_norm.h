// GroupNorm over NCHW f32 activations (torch.nn.GroupNorm), with the SiLU that follows it in every
// VAE block optionally fused in.
#pragma once

#include <cstdint>

#include "core/thread_pool.h"

namespace quill::cpu {

// x, y: [N, C, HW] (y may equal x). Channels are split into `groups` equal groups; each (n, group)
// is normalised over its (C / groups) * HW values with biased variance:
//   y = (x - mean) / sqrt(var + eps) * gamma[c] + beta[c]      (gamma / beta null: no affine)
// then y = y * sigmoid(y) when `silu`. Statistics are accumulated in double.
void group_norm(const float* x, float* y, int64_t N, int64_t C, int64_t HW, int64_t groups, float eps,
                const float* gamma, const float* beta, bool silu, ThreadPool& pool);

// The textbook version the kernel is tested against.
void group_norm_naive(const float* x, float* y, int64_t N, int64_t C, int64_t HW, int64_t groups, float eps,
                      const float* gamma, const float* beta, bool silu);

// x * sigmoid(x) as PyTorch computes it: x / (1 + exp(-x)).
inline float silu_f32(float v) { return v / (1.0f + __builtin_expf(-v)); }

}  // namespace quill::cpu
