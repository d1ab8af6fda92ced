// Single-head self-attention over the pixels of a channel-major feature map, as in the VAE's mid
// block: q, k, v, out are [C, T] (T = H * W tokens, one column per token), and
//   out[:, t] = sum_s softmax_s(q[:, t] . k[:, s] * scale) v[:, s].
// Queries are processed in tiles of kSpatialAttentionTile, so the score buffer is tile x T rather
// than T x T; the products go through gemm_f32.
#pragma once

#include <cstddef>
#include <cstdint>

#include "backend/cpu/gemm.h"
#include "core/thread_pool.h"

namespace quill::cpu {

inline constexpr int64_t kSpatialAttentionTile = 256;

size_t spatial_attention_scratch_floats(int64_t T);
void spatial_attention(const float* q, const float* k, const float* v, float* out, int64_t C, int64_t T, float scale,
                       float* scratch, ThreadPool& pool, GemmImpl gemm = GemmImpl::kAuto);

// Reference: one query at a time, double accumulation.
void spatial_attention_naive(const float* q, const float* k, const float* v, float* out, int64_t C, int64_t T,
                             float scale);

}  // namespace quill::cpu
