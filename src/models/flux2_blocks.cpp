#include "models/flux2_blocks.h"

#include <algorithm>
#include <cmath>
#include <cstring>

namespace quill {

namespace {

// Copies `cols` floats of each of `rows` rows from src (row stride src_ld) to dst (row stride dst_ld).
void copy_columns(const float* src, int64_t src_ld, float* dst, int64_t dst_ld, int64_t rows, int64_t cols) {
  for (int64_t r = 0; r < rows; ++r)
    std::memcpy(dst + r * dst_ld, src + r * src_ld, size_t(cols) * sizeof(float));
}

}  // namespace

Result<Flux2DoubleBlock> Flux2DoubleBlock::load(const Flux2WeightReader& r, const std::string& p, int64_t D,
                                                int64_t Dh, int64_t F) {
  Flux2DoubleBlock b;
  const std::string a = p + ".attn.";
  QUILL_ASSIGN_OR_RETURN(b.to_q, r.linear(a + "to_q", D, D));
  QUILL_ASSIGN_OR_RETURN(b.to_k, r.linear(a + "to_k", D, D));
  QUILL_ASSIGN_OR_RETURN(b.to_v, r.linear(a + "to_v", D, D));
  QUILL_ASSIGN_OR_RETURN(b.to_out, r.linear(a + "to_out.0", D, D));
  QUILL_ASSIGN_OR_RETURN(b.add_q_proj, r.linear(a + "add_q_proj", D, D));
  QUILL_ASSIGN_OR_RETURN(b.add_k_proj, r.linear(a + "add_k_proj", D, D));
  QUILL_ASSIGN_OR_RETURN(b.add_v_proj, r.linear(a + "add_v_proj", D, D));
  QUILL_ASSIGN_OR_RETURN(b.to_add_out, r.linear(a + "to_add_out", D, D));
  QUILL_ASSIGN_OR_RETURN(b.norm_q, r.norm(a + "norm_q", Dh));
  QUILL_ASSIGN_OR_RETURN(b.norm_k, r.norm(a + "norm_k", Dh));
  QUILL_ASSIGN_OR_RETURN(b.norm_added_q, r.norm(a + "norm_added_q", Dh));
  QUILL_ASSIGN_OR_RETURN(b.norm_added_k, r.norm(a + "norm_added_k", Dh));
  QUILL_ASSIGN_OR_RETURN(b.ff_in, r.linear(p + ".ff.linear_in", D, 2 * F));
  QUILL_ASSIGN_OR_RETURN(b.ff_out, r.linear(p + ".ff.linear_out", F, D));
  QUILL_ASSIGN_OR_RETURN(b.ff_context_in, r.linear(p + ".ff_context.linear_in", D, 2 * F));
  QUILL_ASSIGN_OR_RETURN(b.ff_context_out, r.linear(p + ".ff_context.linear_out", F, D));
  return b;
}

Result<Flux2SingleBlock> Flux2SingleBlock::load(const Flux2WeightReader& r, const std::string& p, int64_t D,
                                                int64_t Dh, int64_t F) {
  Flux2SingleBlock b;
  QUILL_ASSIGN_OR_RETURN(b.to_qkv_mlp_proj, r.linear(p + ".attn.to_qkv_mlp_proj", D, 3 * D + 2 * F));
  QUILL_ASSIGN_OR_RETURN(b.to_out, r.linear(p + ".attn.to_out", D + F, D));
  QUILL_ASSIGN_OR_RETURN(b.norm_q, r.norm(p + ".attn.norm_q", Dh));
  QUILL_ASSIGN_OR_RETURN(b.norm_k, r.norm(p + ".attn.norm_k", Dh));
  return b;
}

size_t flux2_double_block_scratch(const Flux2DoubleBlock& b, const ThreadPool& pool) {
  size_t s = 0;
  for (const Linear* l : {&b.to_q, &b.to_k, &b.to_v, &b.to_out, &b.add_q_proj, &b.add_k_proj, &b.add_v_proj,
                          &b.to_add_out, &b.ff_in, &b.ff_out, &b.ff_context_in, &b.ff_context_out})
    s = std::max(s, op_linear_scratch_floats(l->weight, pool));
  return s;
}

size_t flux2_single_block_scratch(const Flux2SingleBlock& b, const ThreadPool& pool) {
  return std::max(op_linear_scratch_floats(b.to_qkv_mlp_proj.weight, pool),
                  op_linear_scratch_floats(b.to_out.weight, pool));
}

Status run_flux2_double_block(const Flux2DoubleBlock& blk, const Flux2Shape& s, const Flux2BlockBuffers& w,
                              const float* mod_img, const float* mod_txt, Dispatcher& ops) {
  const int64_t B = s.B, N = s.N, T = s.T, S = s.S(), D = s.D, H = s.heads, Dh = s.head_dim, F = s.F;
  const int64_t ms = 6 * D;  // modulation row stride: (shift, scale, gate) x (attention, MLP)
  const float eps = s.eps;

  // norm1 / norm1_context + (shift_msa, scale_msa).
  QUILL_RETURN_IF_ERROR(ops.layer_norm_modulate(w.x, w.nx, B, N, D, eps, mod_img, mod_img + D, ms));
  QUILL_RETURN_IF_ERROR(ops.layer_norm_modulate(w.c, w.nc, B, T, D, eps, mod_txt, mod_txt + D, ms));

  // Flux2AttnProcessor: q/k/v of each stream, per-head RMSNorm, joint sequence [text, image].
  for (int64_t n = 0; n < B; ++n) {
    const float* xi = w.nx + n * N * D;
    const float* ci = w.nc + n * T * D;
    float* qn = w.q + n * S * D;
    float* kn = w.k + n * S * D;
    float* vn = w.v + n * S * D;
    QUILL_RETURN_IF_ERROR(ops.linear(ci, T, blk.add_q_proj.weight, nullptr, qn));
    QUILL_RETURN_IF_ERROR(ops.linear(ci, T, blk.add_k_proj.weight, nullptr, kn));
    QUILL_RETURN_IF_ERROR(ops.linear(ci, T, blk.add_v_proj.weight, nullptr, vn));
    QUILL_RETURN_IF_ERROR(ops.linear(xi, N, blk.to_q.weight, nullptr, qn + T * D));
    QUILL_RETURN_IF_ERROR(ops.linear(xi, N, blk.to_k.weight, nullptr, kn + T * D));
    QUILL_RETURN_IF_ERROR(ops.linear(xi, N, blk.to_v.weight, nullptr, vn + T * D));
    QUILL_RETURN_IF_ERROR(ops.rms_norm(qn, qn, T * H, Dh, eps, blk.norm_added_q.data()));
    QUILL_RETURN_IF_ERROR(ops.rms_norm(kn, kn, T * H, Dh, eps, blk.norm_added_k.data()));
    QUILL_RETURN_IF_ERROR(ops.rms_norm(qn + T * D, qn + T * D, N * H, Dh, eps, blk.norm_q.data()));
    QUILL_RETURN_IF_ERROR(ops.rms_norm(kn + T * D, kn + T * D, N * H, Dh, eps, blk.norm_k.data()));
  }
  QUILL_RETURN_IF_ERROR(ops.rope(w.q, B, S, H, Dh, w.rope_cos, w.rope_sin, Dh / 2));
  QUILL_RETURN_IF_ERROR(ops.rope(w.k, B, S, H, Dh, w.rope_cos, w.rope_sin, Dh / 2));
  QUILL_RETURN_IF_ERROR(ops.attention(w.q, w.k, w.v, w.attn, B, S, S, H, Dh, 1.0f / std::sqrt(float(Dh))));
  for (int64_t n = 0; n < B; ++n) {
    const float* an = w.attn + n * S * D;
    QUILL_RETURN_IF_ERROR(ops.linear(an, T, blk.to_add_out.weight, nullptr, w.tmp_c + n * T * D));
    QUILL_RETURN_IF_ERROR(ops.linear(an + T * D, N, blk.to_out.weight, nullptr, w.tmp_x + n * N * D));
  }
  QUILL_RETURN_IF_ERROR(ops.gated_residual(w.x, w.tmp_x, mod_img + 2 * D, B, N, D, ms));  // gate_msa
  QUILL_RETURN_IF_ERROR(ops.gated_residual(w.c, w.tmp_c, mod_txt + 2 * D, B, T, D, ms));  // c_gate_msa

  // norm2 + (shift_mlp, scale_mlp), Flux2FeedForward (linear_in -> SwiGLU -> linear_out), gate_mlp;
  // then the same for the text stream.
  QUILL_RETURN_IF_ERROR(ops.layer_norm_modulate(w.x, w.nx, B, N, D, eps, mod_img + 3 * D, mod_img + 4 * D, ms));
  QUILL_RETURN_IF_ERROR(ops.linear(w.nx, B * N, blk.ff_in.weight, nullptr, w.wide));
  QUILL_RETURN_IF_ERROR(ops.swiglu(w.wide, w.wide + F, 2 * F, w.mlp, B * N, F));
  QUILL_RETURN_IF_ERROR(ops.linear(w.mlp, B * N, blk.ff_out.weight, nullptr, w.tmp_x));
  QUILL_RETURN_IF_ERROR(ops.gated_residual(w.x, w.tmp_x, mod_img + 5 * D, B, N, D, ms));

  QUILL_RETURN_IF_ERROR(ops.layer_norm_modulate(w.c, w.nc, B, T, D, eps, mod_txt + 3 * D, mod_txt + 4 * D, ms));
  QUILL_RETURN_IF_ERROR(ops.linear(w.nc, B * T, blk.ff_context_in.weight, nullptr, w.wide));
  QUILL_RETURN_IF_ERROR(ops.swiglu(w.wide, w.wide + F, 2 * F, w.mlp, B * T, F));
  QUILL_RETURN_IF_ERROR(ops.linear(w.mlp, B * T, blk.ff_context_out.weight, nullptr, w.tmp_c));
  return ops.gated_residual(w.c, w.tmp_c, mod_txt + 5 * D, B, T, D, ms);
}

Status run_flux2_single_block(const Flux2SingleBlock& blk, const Flux2Shape& s, const Flux2BlockBuffers& w,
                              const float* mod, Dispatcher& ops) {
  const int64_t B = s.B, S = s.S(), D = s.D, H = s.heads, Dh = s.head_dim, F = s.F, M = B * S;
  const int64_t P = 3 * D + 2 * F;  // to_qkv_mlp_proj's output: q, k, v, MLP gate, MLP up
  const float eps = s.eps;

  QUILL_RETURN_IF_ERROR(ops.layer_norm_modulate(w.h, w.nh, B, S, D, eps, mod, mod + D, 3 * D));
  QUILL_RETURN_IF_ERROR(ops.linear(w.nh, M, blk.to_qkv_mlp_proj.weight, nullptr, w.wide));

  // Flux2ParallelSelfAttnProcessor: attention on the q/k/v columns, SwiGLU on the MLP columns.
  copy_columns(w.wide, P, w.q, D, M, D);
  copy_columns(w.wide + D, P, w.k, D, M, D);
  copy_columns(w.wide + 2 * D, P, w.v, D, M, D);
  QUILL_RETURN_IF_ERROR(ops.rms_norm(w.q, w.q, M * H, Dh, eps, blk.norm_q.data()));
  QUILL_RETURN_IF_ERROR(ops.rms_norm(w.k, w.k, M * H, Dh, eps, blk.norm_k.data()));
  QUILL_RETURN_IF_ERROR(ops.rope(w.q, B, S, H, Dh, w.rope_cos, w.rope_sin, Dh / 2));
  QUILL_RETURN_IF_ERROR(ops.rope(w.k, B, S, H, Dh, w.rope_cos, w.rope_sin, Dh / 2));
  QUILL_RETURN_IF_ERROR(ops.attention(w.q, w.k, w.v, w.attn, B, S, S, H, Dh, 1.0f / std::sqrt(float(Dh))));
  QUILL_RETURN_IF_ERROR(ops.swiglu(w.wide + 3 * D, w.wide + 3 * D + F, P, w.mlp, M, F));

  // to_out over torch.cat([attention, mlp], dim=-1), then the gated residual.
  copy_columns(w.attn, D, w.cat, D + F, M, D);
  copy_columns(w.mlp, F, w.cat + D, D + F, M, F);
  QUILL_RETURN_IF_ERROR(ops.linear(w.cat, M, blk.to_out.weight, nullptr, w.nh));
  return ops.gated_residual(w.h, w.nh, mod + 2 * D, B, S, D, 3 * D);
}

}  // namespace quill
