#include "models/sd3_mmdit.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "core/arena.h"
#include "io/json_util.h"
#include "models/dit_common.h"

namespace quill {

namespace {
constexpr float kEps = 1e-6f;

#define QUILL_CFG_INT(field)                                                                                       \
  if (auto it = j.find(#field); it != j.end() && !it->is_null()) {                                                 \
    if (!it->is_number_integer()) return invalid_file("config '" #field "' must be an integer").with_file(source); \
    c.field = it->get<int64_t>();                                                                                  \
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
      if (!v.is_number_integer())
        return invalid_file("config 'dual_attention_layers' must hold integers").with_file(source);
      c.dual_attention_layers.push_back(v.get<int64_t>());
    }
  }
  if (auto it = j.find("qk_norm"); it != j.end() && !it->is_null()) {
    if (!it->is_string() || it->get<std::string>() != "rms_norm")
      return unsupported("qk_norm ", dump_json(*it), " (supported: null, \"rms_norm\")").with_file(source);
    c.qk_rms_norm = true;
  }
  auto positive = [&](int64_t v, const char* name, int64_t max) -> Status {
    if (v <= 0 || v > max)
      return invalid_file("config '", name, "' = ", v, " is out of range [1, ", max, "]").with_file(source);
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
  for (int64_t layer : c.dual_attention_layers)
    if (layer < 0 || layer >= c.num_layers)
      return invalid_file("config 'dual_attention_layers' names layer ", layer, ", which does not exist")
          .with_file(source)
          .with_expected_found(str_cat("0 .. ", c.num_layers - 1, " (num_layers ", c.num_layers, ")"),
                               str_cat(layer));
  if (c.caption_projection_dim != c.inner_dim())
    return unsupported("caption_projection_dim (", c.caption_projection_dim, ") must equal heads x head_dim (",
                       c.inner_dim(), ") for the joint blocks")
        .with_file(source);
  return c;
}

bool SD3Bucket::operator<(const SD3Bucket& o) const {
  return std::tie(batch, latent_h, latent_w, text_len) < std::tie(o.batch, o.latent_h, o.latent_w, o.text_len);
}

std::string SD3Bucket::to_string() const {
  return str_cat("batch ", batch, ", latent ", latent_h, "x", latent_w, ", text ", text_len);
}

Result<std::unique_ptr<SD3Transformer>> SD3Transformer::load(std::shared_ptr<ModelFiles> files) {
  std::unique_ptr<SD3Transformer> m(new SD3Transformer());
  m->files_ = files;
  QUILL_ASSIGN_OR_RETURN(m->cfg_, SD3Config::from_json(files->config(), files->path()));
  const SD3Config& c = m->cfg_;
  const int64_t D = c.inner_dim(), p = c.patch_size;
  QUILL_ASSIGN_OR_RETURN(m->patch_proj, load_linear(*files, "pos_embed.proj", c.in_channels * p * p, D, true, true));
  QUILL_ASSIGN_OR_RETURN(m->pos_table,
                         load_f32(*files, "pos_embed.pos_embed", {1, c.pos_embed_max_size * c.pos_embed_max_size, D}));
  QUILL_ASSIGN_OR_RETURN(m->time_text_embed, TimeTextEmbed::load(*files, D, c.pooled_projection_dim));
  QUILL_ASSIGN_OR_RETURN(m->context_embedder, load_linear(*files, "context_embedder", c.joint_attention_dim,
                                                          c.caption_projection_dim, true));
  QUILL_ASSIGN_OR_RETURN(m->norm_out, load_linear(*files, "norm_out.linear", D, 2 * D, true));
  QUILL_ASSIGN_OR_RETURN(m->proj_out, load_linear(*files, "proj_out", D, p * p * c.out_channels, true));

  m->blocks.reserve(size_t(c.num_layers));
  for (int64_t i = 0; i < c.num_layers; ++i) {
    const bool dual =
        std::find(c.dual_attention_layers.begin(), c.dual_attention_layers.end(), i) != c.dual_attention_layers.end();
    QUILL_ASSIGN_OR_RETURN(JointBlock blk,
                           JointBlock::load(*files, str_cat("transformer_blocks.", i), D, c.attention_head_dim,
                                            i == c.num_layers - 1, dual, c.qk_rms_norm));
    m->blocks.push_back(std::move(blk));
  }
  return m;
}

Status SD3Transformer::validate(const SD3Bucket& b) const {
  const int64_t p = cfg_.patch_size;
  if (b.batch <= 0 || b.batch > 1024) return invalid_argument("batch ", b.batch, " out of range [1, 1024]");
  if (b.latent_h <= 0 || b.latent_w <= 0 || b.latent_h % p || b.latent_w % p)
    return invalid_argument("latent size ", b.latent_h, "x", b.latent_w, " must be positive multiples of patch_size ",
                            p);
  if (b.latent_h / p > cfg_.pos_embed_max_size || b.latent_w / p > cfg_.pos_embed_max_size)
    return invalid_argument("latent size ", b.latent_h, "x", b.latent_w, " exceeds pos_embed_max_size ",
                            cfg_.pos_embed_max_size, " patches");
  if (b.text_len <= 0 || b.text_len > 65536)
    return invalid_argument("text length ", b.text_len, " out of range [1, 65536]");
  return Status::ok();
}

size_t SD3Transformer::layout(const SD3Bucket& b, const ThreadPool& pool, Arena* arena, SD3Buffers* w) const {
  const int64_t B = b.batch, p = cfg_.patch_size, D = cfg_.inner_dim();
  const int64_t N = (b.latent_h / p) * (b.latent_w / p), T = b.text_len, S = N + T;
  ArenaSizer sizer;
  auto alloc = [&](float*& ptr, int64_t floats) {
    if (arena)
      ptr = arena->allocate_n<float>(size_t(floats));
    else
      sizer.add(size_t(floats) * sizeof(float));
  };
  SD3Buffers local;
  SD3Buffers& o = w ? *w : local;
  alloc(o.x, B * N * D);
  alloc(o.c, B * T * D);
  alloc(o.temb, B * D);
  alloc(o.temb_act, B * D);
  alloc(o.tproj, B * TimeTextEmbed::kTimeChannels);
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
  alloc(o.pos, N * D);
  alloc(o.out, B * N * p * p * cfg_.out_channels);
  // Scratch: the largest any linear of this model needs, and attention over the joint sequence.
  size_t lin = 0;
  auto need = [&](const Linear& l) { lin = std::max(lin, op_linear_scratch_floats(l.weight, pool)); };
  for (const Linear* l : {&patch_proj, &context_embedder, &norm_out, &proj_out}) need(*l);
  lin = std::max(lin, time_text_embed.linear_scratch_floats(pool));
  for (const JointBlock& blk : blocks) lin = std::max(lin, joint_block_linear_scratch(blk, pool));
  o.scratch.linear_floats = lin;
  o.scratch.attention_floats = op_attention_scratch_floats(S, cfg_.attention_head_dim, pool);
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

  // time_text_embed(timestep, pooled_projections): temb [B,D] and SiLU(temb) for the adaLN linears.
  QUILL_RETURN_IF_ERROR(
      time_text_embed.forward(timestep, pooled_projections, B, w.tproj, w.pooled_h, w.temb, w.temb_act, ops));

  // pos_embed: conv(k=s=p) as patches [B*N, C*p*p] (c, ky, kx order) x proj^T, plus the stored
  // sincos table centre-cropped to the latent grid.                                  x: [B,N,D]
  patchify(hidden_states, B, C, H, W, p, w.patches);
  QUILL_RETURN_IF_ERROR(ops.linear(w.patches, B * N, patch_proj.weight, patch_proj.bias_ptr(), w.x));
  const int64_t M = cfg_.pos_embed_max_size, top = (M - hp) / 2, left = (M - wp) / 2;
  for (int64_t y = 0; y < hp; ++y)
    std::memcpy(w.pos + y * wp * D, pos_table.data() + ((top + y) * M + left) * D, size_t(wp * D) * sizeof(float));
  QUILL_RETURN_IF_ERROR(ops.add(w.x, w.pos, B * N, D, N));

  // context_embedder: [B,T,J] -> c [B,T,D]
  QUILL_RETURN_IF_ERROR(
      ops.linear(encoder_hidden_states, B * T, context_embedder.weight, context_embedder.bias_ptr(), w.c));

  const JointShape shape{B, N, T, D, cfg_.num_attention_heads, cfg_.attention_head_dim};
  const JointBuffers jb{w.x, w.c, w.temb_act, w.mod_x, w.mod_c, w.nx,    w.nx2, w.nc,
                        w.q, w.k, w.v,        w.attn,  w.tmp_x, w.tmp_c, w.ff};
  for (const JointBlock& blk : blocks) QUILL_RETURN_IF_ERROR(run_joint_block(blk, shape, jb, ops));

  // norm_out (AdaLayerNormContinuous: scale first, then shift) -> proj_out -> unpatchify.
  QUILL_RETURN_IF_ERROR(ops.linear(w.temb_act, B, norm_out.weight, norm_out.bias_ptr(), w.mod_x));
  QUILL_RETURN_IF_ERROR(ops.layer_norm_modulate(w.x, w.nx, B, N, D, kEps, w.mod_x + D, w.mod_x, 2 * D));
  QUILL_RETURN_IF_ERROR(ops.linear(w.nx, B * N, proj_out.weight, proj_out.bias_ptr(), w.out));
  unpatchify(w.out, B, cfg_.out_channels, H, W, p, sample);
  return Status::ok();
}

}  // namespace quill
