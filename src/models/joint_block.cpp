#include "models/joint_block.h"

#include <algorithm>
#include <cmath>
#include <cstring>

namespace quill {

namespace {
constexpr float kEps = 1e-6f;

Result<JointAttention> load_attention(const ModelFiles& f, const std::string& p, int64_t D, int64_t Dh, bool joint,
                                      bool context_pre_only, bool qk_rms_norm) {
  JointAttention a;
  QUILL_ASSIGN_OR_RETURN(a.to_q, load_linear(f, p + ".to_q", D, D, true));
  QUILL_ASSIGN_OR_RETURN(a.to_k, load_linear(f, p + ".to_k", D, D, true));
  QUILL_ASSIGN_OR_RETURN(a.to_v, load_linear(f, p + ".to_v", D, D, true));
  QUILL_ASSIGN_OR_RETURN(a.to_out, load_linear(f, p + ".to_out.0", D, D, true));
  if (qk_rms_norm) {
    QUILL_ASSIGN_OR_RETURN(a.norm_q, load_f32(f, p + ".norm_q.weight", {Dh}));
    QUILL_ASSIGN_OR_RETURN(a.norm_k, load_f32(f, p + ".norm_k.weight", {Dh}));
  }
  if (joint) {
    QUILL_ASSIGN_OR_RETURN(a.add_q, load_linear(f, p + ".add_q_proj", D, D, true));
    QUILL_ASSIGN_OR_RETURN(a.add_k, load_linear(f, p + ".add_k_proj", D, D, true));
    QUILL_ASSIGN_OR_RETURN(a.add_v, load_linear(f, p + ".add_v_proj", D, D, true));
    if (!context_pre_only) {
      QUILL_ASSIGN_OR_RETURN(a.to_add_out, load_linear(f, p + ".to_add_out", D, D, true));
    }
    if (qk_rms_norm) {
      QUILL_ASSIGN_OR_RETURN(a.norm_added_q, load_f32(f, p + ".norm_added_q.weight", {Dh}));
      QUILL_ASSIGN_OR_RETURN(a.norm_added_k, load_f32(f, p + ".norm_added_k.weight", {Dh}));
    }
  }
  return a;
}
}  // namespace

Result<JointBlock> JointBlock::load(const ModelFiles& f, const std::string& pre, int64_t D, int64_t Dh,
                                    bool context_pre_only, bool dual, bool qk_rms_norm) {
  JointBlock b;
  b.context_pre_only = context_pre_only;
  b.dual = dual;
  QUILL_ASSIGN_OR_RETURN(b.norm1, load_linear(f, pre + ".norm1.linear", D, (dual ? 9 : 6) * D, true));
  QUILL_ASSIGN_OR_RETURN(b.norm1_context,
                         load_linear(f, pre + ".norm1_context.linear", D, (context_pre_only ? 2 : 6) * D, true));
  QUILL_ASSIGN_OR_RETURN(b.attn, load_attention(f, pre + ".attn", D, Dh, true, context_pre_only, qk_rms_norm));
  if (dual) {
    QUILL_ASSIGN_OR_RETURN(b.attn2, load_attention(f, pre + ".attn2", D, Dh, false, false, qk_rms_norm));
  }
  QUILL_ASSIGN_OR_RETURN(b.ff_up, load_linear(f, pre + ".ff.net.0.proj", D, 4 * D, true));
  QUILL_ASSIGN_OR_RETURN(b.ff_down, load_linear(f, pre + ".ff.net.2", 4 * D, D, true));
  if (!context_pre_only) {
    QUILL_ASSIGN_OR_RETURN(b.ff_context_up, load_linear(f, pre + ".ff_context.net.0.proj", D, 4 * D, true));
    QUILL_ASSIGN_OR_RETURN(b.ff_context_down, load_linear(f, pre + ".ff_context.net.2", 4 * D, D, true));
  }
  return b;
}

size_t joint_block_linear_scratch(const JointBlock& blk, const ThreadPool& pool) {
  size_t s = 0;
  for (const Linear* l : {&blk.norm1, &blk.norm1_context, &blk.attn.to_q, &blk.ff_up, &blk.ff_down})
    s = std::max(s, op_linear_scratch_floats(l->weight, pool));
  return s;
}

Status run_joint_block(const JointBlock& blk, const JointShape& s, const JointBuffers& w, Dispatcher& ops,
                       const RopeTable* rope, const JointKeyMask* mask) {
  const int64_t B = s.B, N = s.N, T = s.T, D = s.D, S = N + T, Hh = s.heads, Dh = s.head_dim;
  const float scale = 1.0f / std::sqrt(float(Dh));
  const int64_t mx = (blk.dual ? 9 : 6) * D;  // modulation row strides
  const int64_t mc = (blk.context_pre_only ? 2 : 6) * D;
  const JointAttention& a = blk.attn;

  // norm1 (AdaLayerNormZero / SD35AdaLayerNormZeroX): chunks shift_msa, scale_msa, gate_msa,
  // shift_mlp, scale_mlp, gate_mlp[, shift_msa2, scale_msa2, gate_msa2].
  QUILL_RETURN_IF_ERROR(ops.linear(w.temb_act, B, blk.norm1.weight, blk.norm1.bias_ptr(), w.mod_x));
  QUILL_RETURN_IF_ERROR(ops.layer_norm_modulate(w.x, w.nx, B, N, D, kEps, w.mod_x, w.mod_x + D, mx));
  if (blk.dual)
    QUILL_RETURN_IF_ERROR(ops.layer_norm_modulate(w.x, w.nx2, B, N, D, kEps, w.mod_x + 6 * D, w.mod_x + 7 * D, mx));
  QUILL_RETURN_IF_ERROR(ops.linear(w.temb_act, B, blk.norm1_context.weight, blk.norm1_context.bias_ptr(), w.mod_c));
  if (blk.context_pre_only)  // AdaLayerNormContinuous chunks scale, then shift
    QUILL_RETURN_IF_ERROR(ops.layer_norm_modulate(w.c, w.nc, B, T, D, kEps, w.mod_c + D, w.mod_c, mc));
  else
    QUILL_RETURN_IF_ERROR(ops.layer_norm_modulate(w.c, w.nc, B, T, D, kEps, w.mod_c, w.mod_c + D, mc));

  // Joint attention over [image tokens, context tokens]: q/k/v [B, S, H, Dh]. Each projection
  // runs once over every row's tokens (one GEMM of B*N or B*T rows, not B small ones) into
  // tmp_x / tmp_c, and its rows are then placed into the joint layout.
  auto place = [&](const float* src, float* dst, int64_t rows, int64_t offset) {
    for (int64_t n = 0; n < B; ++n)
      std::memcpy(dst + (n * S + offset) * D, src + n * rows * D, size_t(rows * D) * sizeof(float));
  };
  auto take = [&](const float* src, float* dst, int64_t rows, int64_t offset) {
    for (int64_t n = 0; n < B; ++n)
      std::memcpy(dst + n * rows * D, src + (n * S + offset) * D, size_t(rows * D) * sizeof(float));
  };
  auto project = [&](const float* in, int64_t rows, const Linear& l, const std::vector<float>& norm, float* tmp,
                     float* dst, int64_t offset) -> Status {
    QUILL_RETURN_IF_ERROR(ops.linear(in, B * rows, l.weight, l.bias_ptr(), tmp));
    if (!norm.empty()) QUILL_RETURN_IF_ERROR(ops.rms_norm(tmp, tmp, B * rows * Hh, Dh, kEps, norm.data()));
    place(tmp, dst, rows, offset);
    return Status::ok();
  };
  static const std::vector<float> kNoNorm;
  QUILL_RETURN_IF_ERROR(project(w.nx, N, a.to_q, a.norm_q, w.tmp_x, w.q, 0));
  QUILL_RETURN_IF_ERROR(project(w.nx, N, a.to_k, a.norm_k, w.tmp_x, w.k, 0));
  QUILL_RETURN_IF_ERROR(project(w.nx, N, a.to_v, kNoNorm, w.tmp_x, w.v, 0));
  QUILL_RETURN_IF_ERROR(project(w.nc, T, *a.add_q, a.norm_added_q, w.tmp_c, w.q, N));
  QUILL_RETURN_IF_ERROR(project(w.nc, T, *a.add_k, a.norm_added_k, w.tmp_c, w.k, N));
  QUILL_RETURN_IF_ERROR(project(w.nc, T, *a.add_v, kNoNorm, w.tmp_c, w.v, N));
  if (rope) {
    QUILL_RETURN_IF_ERROR(ops.rope(w.q, B, S, Hh, Dh, rope->cos, rope->sin, rope->pairs));
    QUILL_RETURN_IF_ERROR(ops.rope(w.k, B, S, Hh, Dh, rope->cos, rope->sin, rope->pairs));
  }
  if (mask) {
    if (blk.attn2) return unsupported("ragged batches with dual attention (SD3.5 attn2)");
    // Row n's real tokens, gathered in perm order, attend each other only (the dense attention
    // kernel on valid[n] tokens); the padding's outputs are zero.
    for (int64_t n = 0; n < B; ++n) {
      const int32_t* perm = mask->perm + n * S;
      const int64_t v = mask->valid[n];
      const size_t row = size_t(n * S * D);
      for (const auto& [src, dst] : {std::pair{w.q, mask->gq}, {w.k, mask->gk}, {w.v, mask->gv}})
        for (int64_t i = 0; i < v; ++i)
          std::memcpy(dst + row + i * D, src + row + perm[i] * D, size_t(D) * sizeof(float));
      QUILL_RETURN_IF_ERROR(
          ops.attention(mask->gq + row, mask->gk + row, mask->gv + row, mask->gout + row, 1, v, v, Hh, Dh, scale));
      for (int64_t i = 0; i < S; ++i) {
        float* out = w.attn + row + perm[i] * D;
        if (i < v)
          std::memcpy(out, mask->gout + row + i * D, size_t(D) * sizeof(float));
        else
          std::fill(out, out + D, 0.0f);
      }
    }
  } else {
    QUILL_RETURN_IF_ERROR(ops.attention(w.q, w.k, w.v, w.attn, B, S, S, Hh, Dh, scale));
  }
  // Output projections, again one GEMM over all rows (nx / nc are free until norm2).
  take(w.attn, w.nx, N, 0);
  QUILL_RETURN_IF_ERROR(ops.linear(w.nx, B * N, a.to_out.weight, a.to_out.bias_ptr(), w.tmp_x));
  if (!blk.context_pre_only) {
    take(w.attn, w.nc, T, N);
    QUILL_RETURN_IF_ERROR(ops.linear(w.nc, B * T, a.to_add_out->weight, a.to_add_out->bias_ptr(), w.tmp_c));
  }
  QUILL_RETURN_IF_ERROR(ops.gated_residual(w.x, w.tmp_x, w.mod_x + 2 * D, B, N, D, mx));  // gate_msa
  if (!blk.context_pre_only)
    QUILL_RETURN_IF_ERROR(ops.gated_residual(w.c, w.tmp_c, w.mod_c + 2 * D, B, T, D, mc));  // c_gate_msa

  // Dual attention (SD3.5): image-only self-attention on the second modulation.
  if (blk.dual) {
    const JointAttention& a2 = *blk.attn2;
    QUILL_RETURN_IF_ERROR(ops.linear(w.nx2, B * N, a2.to_q.weight, a2.to_q.bias_ptr(), w.q));
    QUILL_RETURN_IF_ERROR(ops.linear(w.nx2, B * N, a2.to_k.weight, a2.to_k.bias_ptr(), w.k));
    QUILL_RETURN_IF_ERROR(ops.linear(w.nx2, B * N, a2.to_v.weight, a2.to_v.bias_ptr(), w.v));
    if (!a2.norm_q.empty()) {
      QUILL_RETURN_IF_ERROR(ops.rms_norm(w.q, w.q, B * N * Hh, Dh, kEps, a2.norm_q.data()));
      QUILL_RETURN_IF_ERROR(ops.rms_norm(w.k, w.k, B * N * Hh, Dh, kEps, a2.norm_k.data()));
    }
    if (rope) {
      QUILL_RETURN_IF_ERROR(ops.rope(w.q, B, N, Hh, Dh, rope->cos, rope->sin, rope->pairs));
      QUILL_RETURN_IF_ERROR(ops.rope(w.k, B, N, Hh, Dh, rope->cos, rope->sin, rope->pairs));
    }
    QUILL_RETURN_IF_ERROR(ops.attention(w.q, w.k, w.v, w.attn, B, N, N, Hh, Dh, scale));
    QUILL_RETURN_IF_ERROR(ops.linear(w.attn, B * N, a2.to_out.weight, a2.to_out.bias_ptr(), w.tmp_x));
    QUILL_RETURN_IF_ERROR(ops.gated_residual(w.x, w.tmp_x, w.mod_x + 8 * D, B, N, D, mx));  // gate_msa2
  }

  // Feed-forward: norm2 + (shift_mlp, scale_mlp), GELU(tanh) MLP, gate_mlp.
  QUILL_RETURN_IF_ERROR(ops.layer_norm_modulate(w.x, w.nx, B, N, D, kEps, w.mod_x + 3 * D, w.mod_x + 4 * D, mx));
  QUILL_RETURN_IF_ERROR(ops.linear(w.nx, B * N, blk.ff_up.weight, blk.ff_up.bias_ptr(), w.ff));
  QUILL_RETURN_IF_ERROR(ops.gelu_tanh(w.ff, B * N * 4 * D));
  QUILL_RETURN_IF_ERROR(ops.linear(w.ff, B * N, blk.ff_down.weight, blk.ff_down.bias_ptr(), w.tmp_x));
  QUILL_RETURN_IF_ERROR(ops.gated_residual(w.x, w.tmp_x, w.mod_x + 5 * D, B, N, D, mx));

  if (!blk.context_pre_only) {
    QUILL_RETURN_IF_ERROR(ops.layer_norm_modulate(w.c, w.nc, B, T, D, kEps, w.mod_c + 3 * D, w.mod_c + 4 * D, mc));
    QUILL_RETURN_IF_ERROR(ops.linear(w.nc, B * T, blk.ff_context_up->weight, blk.ff_context_up->bias_ptr(), w.ff));
    QUILL_RETURN_IF_ERROR(ops.gelu_tanh(w.ff, B * T * 4 * D));
    QUILL_RETURN_IF_ERROR(
        ops.linear(w.ff, B * T, blk.ff_context_down->weight, blk.ff_context_down->bias_ptr(), w.tmp_c));
    QUILL_RETURN_IF_ERROR(ops.gated_residual(w.c, w.tmp_c, w.mod_c + 5 * D, B, T, D, mc));
  }
  return Status::ok();
}

}  // namespace quill
