// The two blocks of diffusers' Flux2Transformer2DModel (models/transformers/transformer_flux2.py):
// Flux2TransformerBlock (double stream: image and text streams with their own weights, joint
// attention over [text, image]) and Flux2SingleTransformerBlock (one stream over [text, image]
// with the "parallel" layout: to_qkv_mlp_proj -> [attention || SwiGLU] -> to_out). No biases, no
// LayerNorm affine, per-head RMSNorm on q and k; the modulation is computed once per forward by
// the model and shared by every block (Flux2Modulation), so blocks take it as an input.
#pragma once

#include <string>
#include <vector>

#include "models/flux2_weight_names.h"
#include "models/weights.h"
#include "runtime/dispatcher.h"

namespace quill {

struct Flux2DoubleBlock {
  Linear to_q, to_k, to_v, to_out;              // attn.to_q/k/v [D, D], attn.to_out.0 [D, D]
  Linear add_q_proj, add_k_proj, add_v_proj;    // attn.add_{q,k,v}_proj [D, D]
  Linear to_add_out;                            // attn.to_add_out [D, D]
  std::vector<float> norm_q, norm_k;            // attn.norm_q/k.weight [head_dim]
  std::vector<float> norm_added_q, norm_added_k;
  Linear ff_in, ff_out, ff_context_in, ff_context_out;  // ff.linear_in [2F, D], ff.linear_out [D, F]

  static Result<Flux2DoubleBlock> load(const Flux2WeightReader& r, const std::string& prefix, int64_t D,
                                       int64_t head_dim, int64_t F);
};

struct Flux2SingleBlock {
  Linear to_qkv_mlp_proj;            // attn.to_qkv_mlp_proj [3D + 2F, D]
  Linear to_out;                     // attn.to_out [D, D + F]
  std::vector<float> norm_q, norm_k;  // [head_dim]

  static Result<Flux2SingleBlock> load(const Flux2WeightReader& r, const std::string& prefix, int64_t D,
                                       int64_t head_dim, int64_t F);
};

// Shapes of one forward: B batch, N image tokens, T text tokens (the joint sequence is [text,
// image], S = T + N), D = heads x head_dim, F the SwiGLU hidden size.
struct Flux2Shape {
  int64_t B, N, T, D, heads, head_dim, F;
  float eps;
  int64_t S() const { return N + T; }
};

// Activation buffers from the plan's arena (sizes in floats).
struct Flux2BlockBuffers {
  float *x, *c;             // [B,N,D] image stream, [B,T,D] text stream (double blocks, in place)
  float* h;                 // [B,S,D] joint stream (single blocks, in place)
  float *nx, *nc, *nh;      // normed streams: [B,N,D], [B,T,D], [B,S,D]
  float *q, *k, *v, *attn;  // [B,S,D]
  float *tmp_x, *tmp_c;     // [B,N,D], [B,T,D]
  float* wide;              // max(B*max(N,T)*2F, B*S*(3D+2F)): SwiGLU input / fused projection
  float* mlp;               // [B*S, F] SwiGLU output
  float* cat;               // [B*S, D+F] [attention || MLP], to_out's input in single blocks (may alias `wide`)
  const float *rope_cos, *rope_sin;  // [S, head_dim/2] for the joint sequence
};

// mod_img / mod_txt [B, 6D]: (shift, scale, gate) for attention, then for the MLP.
Status run_flux2_double_block(const Flux2DoubleBlock& blk, const Flux2Shape& s, const Flux2BlockBuffers& w,
                              const float* mod_img, const float* mod_txt, Dispatcher& ops);
// mod [B, 3D]: shift, scale, gate.
Status run_flux2_single_block(const Flux2SingleBlock& blk, const Flux2Shape& s, const Flux2BlockBuffers& w,
                              const float* mod, Dispatcher& ops);

size_t flux2_double_block_scratch(const Flux2DoubleBlock& blk, const ThreadPool& pool);
size_t flux2_single_block_scratch(const Flux2SingleBlock& blk, const ThreadPool& pool);

}  // namespace quill
