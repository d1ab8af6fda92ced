// diffusers' JointTransformerBlock (models/attention.py), the MMDiT block shared by
// SD3Transformer2DModel and Quill's line model: adaLN-Zero modulation, joint attention over
// [image tokens, context tokens], optional SD3.5 dual attention and qk RMSNorm, GELU(tanh) MLPs,
// and the `context_pre_only` variant for the last block. The line model adds rotary position
// embeddings on q/k; SD3 passes no RoPE.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "models/weights.h"
#include "runtime/dispatcher.h"

namespace quill {

struct JointAttention {
  Linear to_q, to_k, to_v, to_out;
  std::optional<Linear> add_q, add_k, add_v, to_add_out;          // context projections (joint attention)
  std::vector<float> norm_q, norm_k, norm_added_q, norm_added_k;  // qk RMSNorm weights, empty if none
};

struct JointBlock {
  bool context_pre_only = false, dual = false;
  Linear norm1, norm1_context;  // adaLN modulation linears: 6D (9D dual); context 6D (2D pre-only)
  JointAttention attn;
  std::optional<JointAttention> attn2;  // dual attention: image-only self-attention
  Linear ff_up, ff_down;                // ff.net.0.proj, ff.net.2
  std::optional<Linear> ff_context_up, ff_context_down;

  static Result<JointBlock> load(const ModelFiles& files, const std::string& prefix, int64_t dim, int64_t head_dim,
                                 bool context_pre_only, bool dual, bool qk_rms_norm);
};

// Rotary embedding for the joint sequence: for token s and rotation pair i, (cos, sin) at
// [s * pairs + i]; pairs = head_dim / 2. Pairs are adjacent elements (2i, 2i+1) of each head.
struct RopeTable {
  const float* cos = nullptr;
  const float* sin = nullptr;
  int64_t pairs = 0;
};

struct JointShape {
  int64_t B, N, T, D, heads, head_dim;  // batch, image tokens, context tokens, dim, heads
};

// Activation buffers (from a plan's arena). x [B,N,D], c [B,T,D] are updated in place.
struct JointBuffers {
  float *x, *c, *temb_act;  // residual streams; SiLU(temb) [B,D]
  float *mod_x, *mod_c;     // [B,9D], [B,6D]
  float *nx, *nx2, *nc;     // normed streams
  float *q, *k, *v, *attn;  // [B,N+T,D]
  float *tmp_x, *tmp_c;     // [B,N,D], [B,T,D]
  float* ff;                // [B*max(N,T), 4D]
};

// Ragged batches (rows padded to a common width): each row's real tokens, listed first in
// perm[b * S ...] (indices into its joint sequence, the padding after them), valid[b] of them.
// Attention gathers each row's real q/k/v into that order, runs it on its valid[b] tokens and
// scatters the result back (padding: zeros), so a row's real tokens see exactly what they would
// alone; every other op is per token or per row. gq, gk, gv: [B, S, D] each, distinct from the
// block's buffers except that gout may alias w.q (q is read only by the gather before it).
struct JointKeyMask {
  const int32_t* perm = nullptr;
  const int32_t* valid = nullptr;
  float *gq = nullptr, *gk = nullptr, *gv = nullptr, *gout = nullptr;
};

Status run_joint_block(const JointBlock& blk, const JointShape& s, const JointBuffers& w, Dispatcher& ops,
                       const RopeTable* rope = nullptr, const JointKeyMask* mask = nullptr);

// Largest linear scratch any of the block's weights needs.
size_t joint_block_linear_scratch(const JointBlock& blk, const ThreadPool& pool);

}  // namespace quill
