#include "models/sd3_mmdit.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "core/arena.h"

namespace quill {

namespace {
constexpr float kEps = 1e-6f;
constexpr int64_t kTimeChannels = 256;

#define QUILL_CFG_INT(field)                                                  \
  if (auto it = j.find(#field); it != j.end() && !it->is_null()) {            \
    if (!it->is_number_integer())                                             \
      return invalid_file("config '" #field "' must be an integer").with_file(source); \
    c.field = it->get<int64_t>();                                             \
  }
}  // namespace

Result<SD3Config> SD3Config::from_json(const nlohmann::json& j, const std::string& source) {
  if (!j.is_object()) return invalid_file("config is not a JSON object").with_file(source);
  SD3Config c;
  QUILL_CFG_INT(sample_size)
  QUILL_CFG_INT(patch_size)
  QUILL_CFG_INT(in_channels)
  QUILL_CFG_INT(num_layers)
  QUILL_CFG_INT(attention_head_dim)
  QUILL_CFG_INT(num_attention_heads)
  QUILL_CFG_INT(joint_attention_dim)
  QUILL_CFG_INT(caption_projection_dim)
  QUILL_CFG_INT(pooled_projection_dim)
  QUILL_CFG_INT(out_channels)
  QUILL_CFG_INT(pos_embed_max_size)
  if (auto it = j.find("out_channels"); it != j.end() && it->is_null()) c.out_channels = c.in_channels;
  if (auto it = j.find("dual_attention_layers"); it != j.end() && !it->is_null()) {
    if (!it->is_array()) return invalid_file("config 'dual_attention_layers' must be a list").with_file(source);
    for (const auto& v : *it) {
      if (!v.is_number_integer()) return invalid_file("config 'dual_attention_layers' must hold integers").with_file(source);
      c.dual_attention_layers.push_back(v.get<int64_t>());
    }
  }
  if (auto it = j.find("qk_norm"); it != j.end() && !it->is_null()) {
    if (!it->is_string() || it->get<std::string>() != "rms_norm")
      return unsupported("qk_norm ", it->dump(), " (supported: null, \"rms_norm\")").with_file(source);
    c.qk_rms_norm = true;
  }
  auto positive = [&](int64_t v, const char* name, int64_t max) -> Status {
    if (v <= 0 || v > max) return invalid_file("config '", name, "' = ", v, " is out of range [1, ", max, "]").with_file(source);
    return Status::ok();
  };
  QUILL_RETURN_IF_ERROR(positive(c.patch_size, "patch_size", 64));
  QUILL_RETURN_IF_ERROR(positive(c.in_channels, "in_channels", 4096));
  QUILL_RETURN_IF_ERROR(positive(c.out_channels, "out_channels", 4096));
  QUILL_RETURN_IF_ERROR(positive(c.num_layers, "num_layers", 1024));
  QUILL_RETURN_IF_ERROR(positive(c.attention_head_dim, "attention_head_dim", 1024));
  QUILL_RETURN_IF_ERROR(positive(c.num_attention_heads, "num_attention_heads", 1024));
  QUILL_RETURN_IF_ERROR(positive(c.joint_attention_dim, "joint_attention_dim", 1 << 16));
  QUILL_RETURN_IF_ERROR(positive(c.pooled_projection_dim, "pooled_projection_dim", 1 << 16));
  QUILL_RETURN_IF_ERROR(positive(c.pos_embed_max_size, "pos_embed_max_size", 4096));
  if (c.caption_projection_dim != c.inner_dim())
    return unsupported("caption_projection_dim (", c.caption_projection_dim, ") must equal heads x head_dim (",
                       c.inner_dim(), ") for the joint blocks").with_file(source);
  return c;
}

bool SD3Bucket::operator<(const SD3Bucket& o) const {
  return std::tie(batch, latent_h, latent_w, text_len) < std::tie(o.batch, o.latent_h, o.latent_w, o.text_len);
}

std::string SD3Bucket::to_string() const {
  return str_cat("batch ", batch, ", latent ", latent_h, "x", latent_w, ", text ", text_len);
}

Status SD3Transformer::load_attention(const std::string& p, bool joint, bool context_pre_only, Attention* a) const {
  const int64_t D = cfg_.inner_dim();
  QUILL_ASSIGN_OR_RETURN(a->to_q, load_linear(*files_, p + ".to_q", D, D, true));
  QUILL_ASSIGN_OR_RETURN(a->to_k, load_linear(*files_, p + ".to_k", D, D, true));
  QUILL_ASSIGN_OR_RETURN(a->to_v, load_linear(*files_, p + ".to_v", D, D, true));
  QUILL_ASSIGN_OR_RETURN(a->to_out, load_linear(*files_, p + ".to_out.0", D, D, true));
  const int64_t Dh = cfg_.attention_head_dim;
  if (cfg_.qk_rms_norm) {
    QUILL_ASSIGN_OR_RETURN(a->norm_q, load_f32(*files_, p + ".norm_q.weight", {Dh}));
    QUILL_ASSIGN_OR_RETURN(a->norm_k, load_f32(*files_, p + ".norm_k.weight", {Dh}));
  }
  if (joint) {
    QUILL_ASSIGN_OR_RETURN(a->add_q, load_linear(*files_, p + ".add_q_proj", D, D, true));
    QUILL_ASSIGN_OR_RETURN(a->add_k, load_linear(*files_, p + ".add_k_proj", D, D, true));
    QUILL_ASSIGN_OR_RETURN(a->add_v, load_linear(*files_, p + ".add_v_proj", D, D, true));
    if (!context_pre_only) {
      QUILL_ASSIGN_OR_RETURN(a->to_add_out, load_linear(*files_, p + ".to_add_out", D, D, true));
    }
    if (cfg_.qk_rms_norm) {
      QUILL_ASSIGN_OR_RETURN(a->norm_added_q, load_f32(*files_, p + ".norm_added_q.weight", {Dh}));
      QUILL_ASSIGN_OR_RETURN(a->norm_added_k, load_f32(*files_, p + ".norm_added_k.weight", {Dh}));
    }
  }
  return Status::ok();
}

Result<std::unique_ptr<SD3Transformer>> SD3Transformer::load(std::shared_ptr<ModelFiles> files) {
  std::unique_ptr<SD3Transformer> m(new SD3Transformer());
  m->files_ = files;
  QUILL_ASSIGN_OR_RETURN(m->cfg_, SD3Config::from_json(files->config(), files->path()));
  const SD3Config& c = m->cfg_;
  const int64_t D = c.inner_dim(), p = c.patch_size;
  QUILL_ASSIGN_OR_RETURN(m->patch_proj, load_linear(*files, "pos_embed.proj", c.in_channels * p * p, D, true, true));
  QUILL_ASSIGN_OR_RETURN(m->pos_table, load_f32(*files, "pos_embed.pos_embed", {1, c.pos_embed_max_size * c.pos_embed_max_size, D}));
  QUILL_ASSIGN_OR_RETURN(m->time_linear_1, load_linear(*files, "time_text_embed.timestep_embedder.linear_1", kTimeChannels, D, true));
  QUILL_ASSIGN_OR_RETURN(m->time_linear_2, load_linear(*files, "time_text_embed.timestep_embedder.linear_2", D, D, true));
  QUILL_ASSIGN_OR_RETURN(m->text_linear_1, load_linear(*files, "time_text_embed.text_embedder.linear_1", c.pooled_projection_dim, D, true));
  QUILL_ASSIGN_OR_RETURN(m->text_linear_2, load_linear(*files, "time_text_embed.text_embedder.linear_2", D, D, true));
  QUILL_ASSIGN_OR_RETURN(m->context_embedder, load_linear(*files, "context_embedder", c.joint_attention_dim, c.caption_projection_dim, true));
  QUILL_ASSIGN_OR_RETURN(m->norm_out, load_linear(*files, "norm_out.linear", D, 2 * D, true));
  QUILL_ASSIGN_OR_RETURN(m->proj_out, load_linear(*files, "proj_out", D, p * p * c.out_channels, true));

  m->blocks.resize(size_t(c.num_layers));
  for (int64_t i = 0; i < c.num_layers; ++i) {
    Block& b = m->blocks[size_t(i)];
    const std::string pre = str_cat("transformer_blocks.", i);
    b.context_pre_only = (i == c.num_layers - 1);
    b.dual = std::find(c.dual_attention_layers.begin(), c.dual_attention_layers.end(), i) != c.dual_attention_layers.end();
    QUILL_ASSIGN_OR_RETURN(b.norm1, load_linear(*files, pre + ".norm1.linear", D, (b.dual ? 9 : 6) * D, true));
    QUILL_ASSIGN_OR_RETURN(b.norm1_context, load_linear(*files, pre + ".norm1_context.linear", D, (b.context_pre_only ? 2 : 6) * D, true));
    QUILL_RETURN_IF_ERROR(m->load_attention(pre + ".attn", true, b.context_pre_only, &b.attn));
    if (b.dual) {
      b.attn2.emplace();
      QUILL_RETURN_IF_ERROR(m->load_attention(pre + ".attn2", false, false, &*b.attn2));
    }
    QUILL_ASSIGN_OR_RETURN(b.ff_up, load_linear(*files, pre + ".ff.net.0.proj", D, 4 * D, true));
    QUILL_ASSIGN_OR_RETURN(b.ff_down, load_linear(*files, pre + ".ff.net.2", 4 * D, D, true));
    if (!b.context_pre_only) {
      QUILL_ASSIGN_OR_RETURN(b.ff_context_up, load_linear(*files, pre + ".ff_context.net.0.proj", D, 4 * D, true));
      QUILL_ASSIGN_OR_RETURN(b.ff_context_down, load_linear(*files, pre + ".ff_context.net.2", 4 * D, D, true));
    }
  }
  return m;
}

Status SD3Transformer::validate(const SD3Bucket& b) const {
  const int64_t p = cfg_.patch_size;
  if (b.batch <= 0 || b.batch > 1024) return invalid_argument("batch ", b.batch, " out of range [1, 1024]");
  if (b.latent_h <= 0 || b.latent_w <= 0 || b.latent_h % p || b.latent_w % p)
    return invalid_argument("latent size ", b.latent_h, "x", b.latent_w, " must be positive multiples of patch_size ", p);
  if (b.latent_h / p > cfg_.pos_embed_max_size || b.latent_w / p > cfg_.pos_embed_max_size)
    return invalid_argument("latent size ", b.latent_h, "x", b.latent_w, " exceeds pos_embed_max_size ",
                            cfg_.pos_embed_max_size, " patches");
  if (b.text_len <= 0 || b.text_len > 65536) return invalid_argument("text length ", b.text_len, " out of range [1, 65536]");
  return Status::ok();
}

size_t SD3Transformer::layout(const SD3Bucket& b, const ThreadPool& pool, Arena* arena, SD3Buffers* w) const {
  const int64_t B = b.batch, p = cfg_.patch_size, D = cfg_.inner_dim();
  const int64_t N = (b.latent_h / p) * (b.latent_w / p), T = b.text_len, S = N + T;
  ArenaSizer sizer;
  auto alloc = [&](float*& ptr, int64_t floats) {
    if (arena) ptr = arena->allocate_n<float>(size_t(floats));
    else sizer.add(size_t(floats) * sizeof(float));
  };
  SD3Buffers local;
  SD3Buffers& o = w ? *w : local;
  alloc(o.x, B * N * D);
  alloc(o.c, B * T * D);
  alloc(o.temb, B * D);
  alloc(o.temb_act, B * D);
  alloc(o.tproj, B * kTimeChannels);
  alloc(o.pooled_h, B * D);
  alloc(o.mod_x, B * 9 * D);
  alloc(o.mod_c, B * 6 * D);
  alloc(o.nx, B * N * D);
  alloc(o.nx2, B * N * D);
  alloc(o.nc, B * T * D);
  alloc(o.q, B * S * D);
  alloc(o.k, B * S * D);
  alloc(o.v, B * S * D);
  alloc(o.attn, B * S * D);
  alloc(o.tmp_x, B * N * D);
  alloc(o.tmp_c, B * T * D);
  alloc(o.ff, B * std::max(N, T) * 4 * D);
  alloc(o.patches, B * N * cfg_.in_channels * p * p);
  alloc(o.out, B * N * p * p * cfg_.out_channels);
  // Scratch: the largest any linear of this model needs, and attention over the joint sequence.
  size_t lin = 0;
  auto need = [&](const Linear& l) { lin = std::max(lin, CpuBackend::linear_scratch_floats(l.weight, pool)); };
  for (const Linear* l : {&patch_proj, &time_linear_1, &time_linear_2, &text_linear_1, &text_linear_2,
                          &context_embedder, &norm_out, &proj_out})
    need(*l);
  for (const Block& blk : blocks) {
    need(blk.norm1); need(blk.norm1_context); need(blk.attn.to_q); need(blk.ff_up); need(blk.ff_down);
  }
  o.scratch.linear_floats = lin;
  o.scratch.attention_floats = CpuBackend::attention_scratch_floats(S, cfg_.attention_head_dim, pool);
  alloc(o.scratch.linear, int64_t(lin));
  alloc(o.scratch.attention, int64_t(o.scratch.attention_floats));
  return arena ? arena->used() : sizer.peak();
}

Status SD3Transformer::forward(const SD3Bucket& b, const float* hidden_states, const float* encoder_hidden_states,
                               const float* pooled_projections, const float* timestep, float* sample, SD3Buffers& w,
                               Dispatcher& ops) const {
  const int64_t B = b.batch, p = cfg_.patch_size, D = cfg_.inner_dim(), C = cfg_.in_channels;
  const int64_t H = b.latent_h, W = b.latent_w, hp = H / p, wp = W / p, N = hp * wp, T = b.text_len;
  ops.set_scratch(w.scratch);

  // time_text_embed: sinusoid(t) [B,256] (cos first) -> linear_1 -> SiLU -> linear_2, plus
  // pooled [B,P] -> linear_1 -> SiLU -> linear_2.                                    temb: [B,D]
  const int64_t half = kTimeChannels / 2;
  for (int64_t n = 0; n < B; ++n) {
    for (int64_t i = 0; i < half; ++i) {
      // As diffusers computes it, in f32: exp((-ln(10000) * i) / half).
      const float exponent = (-static_cast<float>(std::log(10000.0)) * float(i)) / float(half);
      const float freq = std::exp(exponent);
      const float arg = timestep[n] * freq;
      w.tproj[n * kTimeChannels + i] = std::cos(arg);
      w.tproj[n * kTimeChannels + half + i] = std::sin(arg);
    }
  }
  QUILL_RETURN_IF_ERROR(ops.linear(w.tproj, B, time_linear_1.weight, time_linear_1.bias_ptr(), w.temb_act));
  QUILL_RETURN_IF_ERROR(ops.silu(w.temb_act, B * D));
  QUILL_RETURN_IF_ERROR(ops.linear(w.temb_act, B, time_linear_2.weight, time_linear_2.bias_ptr(), w.temb));
  QUILL_RETURN_IF_ERROR(ops.linear(pooled_projections, B, text_linear_1.weight, text_linear_1.bias_ptr(), w.temb_act));
  QUILL_RETURN_IF_ERROR(ops.silu(w.temb_act, B * D));
  QUILL_RETURN_IF_ERROR(ops.linear(w.temb_act, B, text_linear_2.weight, text_linear_2.bias_ptr(), w.pooled_h));
  for (int64_t i = 0; i < B * D; ++i) w.temb[i] += w.pooled_h[i];
  // Every adaLN linear takes SiLU(temb).
  std::memcpy(w.temb_act, w.temb, size_t(B * D) * sizeof(float));
  QUILL_RETURN_IF_ERROR(ops.silu(w.temb_act, B * D));

  // pos_embed: conv(k=s=p) as patches [B*N, C*p*p] (c, ky, kx order) x proj^T, plus the stored
  // sincos table centre-cropped to the latent grid.                                  x: [B,N,D]
  for (int64_t n = 0; n < B; ++n)
    for (int64_t y = 0; y < hp; ++y)
      for (int64_t xq = 0; xq < wp; ++xq) {
        float* row = w.patches + ((n * hp + y) * wp + xq) * C * p * p;
        for (int64_t c = 0; c < C; ++c)
          for (int64_t ky = 0; ky < p; ++ky)
            for (int64_t kx = 0; kx < p; ++kx)
              row[(c * p + ky) * p + kx] = hidden_states[((n * C + c) * H + y * p + ky) * W + xq * p + kx];
      }
  QUILL_RETURN_IF_ERROR(ops.linear(w.patches, B * N, patch_proj.weight, patch_proj.bias_ptr(), w.x));
  const int64_t M = cfg_.pos_embed_max_size, top = (M - hp) / 2, left = (M - wp) / 2;
  for (int64_t n = 0; n < B; ++n)
    for (int64_t y = 0; y < hp; ++y)
      for (int64_t xq = 0; xq < wp; ++xq) {
        float* dst = w.x + ((n * hp + y) * wp + xq) * D;
        const float* pe = pos_table.data() + ((top + y) * M + left + xq) * D;
        for (int64_t d = 0; d < D; ++d) dst[d] += pe[d];
      }

  // context_embedder: [B,T,J] -> c [B,T,D]
  QUILL_RETURN_IF_ERROR(ops.linear(encoder_hidden_states, B * T, context_embedder.weight, context_embedder.bias_ptr(), w.c));

  for (const Block& blk : blocks) QUILL_RETURN_IF_ERROR(run_block(blk, b, w, ops));

  // norm_out (AdaLayerNormContinuous: scale first, then shift) -> proj_out -> unpatchify.
  QUILL_RETURN_IF_ERROR(ops.linear(w.temb_act, B, norm_out.weight, norm_out.bias_ptr(), w.mod_x));
  QUILL_RETURN_IF_ERROR(ops.layer_norm_modulate(w.x, w.nx, B, N, D, kEps, w.mod_x + D, w.mod_x, 2 * D));
  QUILL_RETURN_IF_ERROR(ops.linear(w.nx, B * N, proj_out.weight, proj_out.bias_ptr(), w.out));
  const int64_t Co = cfg_.out_channels;
  // out[n, y, x, ky, kx, c] -> sample[n, c, y*p+ky, x*p+kx]
  for (int64_t n = 0; n < B; ++n)
    for (int64_t y = 0; y < hp; ++y)
      for (int64_t xq = 0; xq < wp; ++xq) {
        const float* src = w.out + ((n * hp + y) * wp + xq) * p * p * Co;
        for (int64_t ky = 0; ky < p; ++ky)
          for (int64_t kx = 0; kx < p; ++kx)
            for (int64_t c = 0; c < Co; ++c)
              sample[((n * Co + c) * H + y * p + ky) * W + xq * p + kx] = src[(ky * p + kx) * Co + c];
      }
  return Status::ok();
}

Status SD3Transformer::run_block(const Block& blk, const SD3Bucket& b, SD3Buffers& w, Dispatcher& ops) const {
  const int64_t B = b.batch, p = cfg_.patch_size, D = cfg_.inner_dim();
  const int64_t N = (b.latent_h / p) * (b.latent_w / p), T = b.text_len, S = N + T;
  const int64_t Hh = cfg_.num_attention_heads, Dh = cfg_.attention_head_dim;
  const float scale = 1.0f / std::sqrt(float(Dh));
  const int64_t mx = (blk.dual ? 9 : 6) * D;  // modulation row strides
  const int64_t mc = (blk.context_pre_only ? 2 : 6) * D;
  const Attention& a = blk.attn;

  // norm1 (AdaLayerNormZero / SD35AdaLayerNormZeroX): chunks shift_msa, scale_msa, gate_msa,
  // shift_mlp, scale_mlp, gate_mlp[, shift_msa2, scale_msa2, gate_msa2].
  QUILL_RETURN_IF_ERROR(ops.linear(w.temb_act, B, blk.norm1.weight, blk.norm1.bias_ptr(), w.mod_x));
  QUILL_RETURN_IF_ERROR(ops.layer_norm_modulate(w.x, w.nx, B, N, D, kEps, w.mod_x, w.mod_x + D, mx));
  if (blk.dual) QUILL_RETURN_IF_ERROR(ops.layer_norm_modulate(w.x, w.nx2, B, N, D, kEps, w.mod_x + 6 * D, w.mod_x + 7 * D, mx));
  QUILL_RETURN_IF_ERROR(ops.linear(w.temb_act, B, blk.norm1_context.weight, blk.norm1_context.bias_ptr(), w.mod_c));
  if (blk.context_pre_only)  // AdaLayerNormContinuous: scale, shift
    QUILL_RETURN_IF_ERROR(ops.layer_norm_modulate(w.c, w.nc, B, T, D, kEps, w.mod_c + D, w.mod_c, mc));
  else
    QUILL_RETURN_IF_ERROR(ops.layer_norm_modulate(w.c, w.nc, B, T, D, kEps, w.mod_c, w.mod_c + D, mc));

  // Joint attention over [image tokens, text tokens]: q/k/v [B, S, H, Dh].
  for (int64_t n = 0; n < B; ++n) {
    const float* xi = w.nx + n * N * D;
    const float* ci = w.nc + n * T * D;
    float* qn = w.q + n * S * D;
    float* kn = w.k + n * S * D;
    float* vn = w.v + n * S * D;
    QUILL_RETURN_IF_ERROR(ops.linear(xi, N, a.to_q.weight, a.to_q.bias_ptr(), qn));
    QUILL_RETURN_IF_ERROR(ops.linear(xi, N, a.to_k.weight, a.to_k.bias_ptr(), kn));
    QUILL_RETURN_IF_ERROR(ops.linear(xi, N, a.to_v.weight, a.to_v.bias_ptr(), vn));
    QUILL_RETURN_IF_ERROR(ops.linear(ci, T, a.add_q->weight, a.add_q->bias_ptr(), qn + N * D));
    QUILL_RETURN_IF_ERROR(ops.linear(ci, T, a.add_k->weight, a.add_k->bias_ptr(), kn + N * D));
    QUILL_RETURN_IF_ERROR(ops.linear(ci, T, a.add_v->weight, a.add_v->bias_ptr(), vn + N * D));
    if (!a.norm_q.empty()) {
      QUILL_RETURN_IF_ERROR(ops.rms_norm(qn, qn, N * Hh, Dh, kEps, a.norm_q.data()));
      QUILL_RETURN_IF_ERROR(ops.rms_norm(kn, kn, N * Hh, Dh, kEps, a.norm_k.data()));
      QUILL_RETURN_IF_ERROR(ops.rms_norm(qn + N * D, qn + N * D, T * Hh, Dh, kEps, a.norm_added_q.data()));
      QUILL_RETURN_IF_ERROR(ops.rms_norm(kn + N * D, kn + N * D, T * Hh, Dh, kEps, a.norm_added_k.data()));
    }
  }
  QUILL_RETURN_IF_ERROR(ops.attention(w.q, w.k, w.v, w.attn, B, S, S, Hh, Dh, scale));
  for (int64_t n = 0; n < B; ++n) {
    QUILL_RETURN_IF_ERROR(ops.linear(w.attn + n * S * D, N, a.to_out.weight, a.to_out.bias_ptr(), w.tmp_x + n * N * D));
    if (!blk.context_pre_only)
      QUILL_RETURN_IF_ERROR(ops.linear(w.attn + n * S * D + N * D, T, a.to_add_out->weight, a.to_add_out->bias_ptr(), w.tmp_c + n * T * D));
  }
  QUILL_RETURN_IF_ERROR(ops.gated_residual(w.x, w.tmp_x, w.mod_x + 2 * D, B, N, D, mx));  // gate_msa
  if (!blk.context_pre_only)
    QUILL_RETURN_IF_ERROR(ops.gated_residual(w.c, w.tmp_c, w.mod_c + 2 * D, B, T, D, mc));  // c_gate_msa

  // Dual attention (SD3.5): image-only self-attention on the second modulation.
  if (blk.dual) {
    const Attention& a2 = *blk.attn2;
    QUILL_RETURN_IF_ERROR(ops.linear(w.nx2, B * N, a2.to_q.weight, a2.to_q.bias_ptr(), w.q));
    QUILL_RETURN_IF_ERROR(ops.linear(w.nx2, B * N, a2.to_k.weight, a2.to_k.bias_ptr(), w.k));
    QUILL_RETURN_IF_ERROR(ops.linear(w.nx2, B * N, a2.to_v.weight, a2.to_v.bias_ptr(), w.v));
    if (!a2.norm_q.empty()) {
      QUILL_RETURN_IF_ERROR(ops.rms_norm(w.q, w.q, B * N * Hh, Dh, kEps, a2.norm_q.data()));
      QUILL_RETURN_IF_ERROR(ops.rms_norm(w.k, w.k, B * N * Hh, Dh, kEps, a2.norm_k.data()));
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
    QUILL_RETURN_IF_ERROR(ops.linear(w.ff, B * T, blk.ff_context_down->weight, blk.ff_context_down->bias_ptr(), w.tmp_c));
    QUILL_RETURN_IF_ERROR(ops.gated_residual(w.c, w.tmp_c, w.mod_c + 5 * D, B, T, D, mc));
  }
  return Status::ok();
}

}  // namespace quill
