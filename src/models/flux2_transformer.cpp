#include "models/flux2_transformer.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>

#include "core/arena.h"
#include "io/json_util.h"
#include "models/dit_common.h"

namespace quill {

int64_t Flux2Config::mlp_hidden() const { return static_cast<int64_t>(double(inner_dim()) * mlp_ratio); }

Result<Flux2Config> Flux2Config::from_json(const nlohmann::json& j, const std::string& source) {
  if (!j.is_object()) return invalid_file("config is not a JSON object").with_file(source);
  Flux2Config c;
  auto get_int = [&](const char* key, int64_t& field, int64_t lo, int64_t hi) -> Status {
    auto it = j.find(key);
    if (it == j.end() || it->is_null()) return Status::ok();
    if (!it->is_number_integer()) return invalid_file("config '", key, "' must be an integer").with_file(source);
    field = it->get<int64_t>();
    if (field < lo || field > hi)
      return invalid_file("config '", key, "' = ", field, " is out of range [", lo, ", ", hi, "]").with_file(source);
    return Status::ok();
  };
  auto get_number = [&](const char* key, double& field, double lo, double hi) -> Status {
    auto it = j.find(key);
    if (it == j.end() || it->is_null()) return Status::ok();
    if (!it->is_number() || !(it->get<double>() >= lo && it->get<double>() <= hi))
      return invalid_file("config '", key, "' must be a number in [", lo, ", ", hi, "], got ", dump_json(*it))
          .with_file(source);
    field = it->get<double>();
    return Status::ok();
  };
  QUILL_RETURN_IF_ERROR(get_int("patch_size", c.patch_size, 1, 16));
  QUILL_RETURN_IF_ERROR(get_int("in_channels", c.in_channels, 1, 4096));
  c.out_channels = c.in_channels;  // out_channels: null or absent means in_channels
  QUILL_RETURN_IF_ERROR(get_int("out_channels", c.out_channels, 1, 4096));
  QUILL_RETURN_IF_ERROR(get_int("num_layers", c.num_layers, 0, 1024));
  QUILL_RETURN_IF_ERROR(get_int("num_single_layers", c.num_single_layers, 0, 1024));
  QUILL_RETURN_IF_ERROR(get_int("attention_head_dim", c.attention_head_dim, 2, 1024));
  QUILL_RETURN_IF_ERROR(get_int("num_attention_heads", c.num_attention_heads, 1, 1024));
  QUILL_RETURN_IF_ERROR(get_int("joint_attention_dim", c.joint_attention_dim, 1, 1 << 17));
  QUILL_RETURN_IF_ERROR(get_int("timestep_guidance_channels", c.timestep_guidance_channels, 2, 1 << 14));
  QUILL_RETURN_IF_ERROR(get_number("mlp_ratio", c.mlp_ratio, 1.0 / 64, 64));
  // theta <= 0 or not finite makes every RoPE angle NaN or Inf.
  QUILL_RETURN_IF_ERROR(get_number("rope_theta", c.rope_theta, 1e-6, 1e12));
  double eps = c.eps;
  QUILL_RETURN_IF_ERROR(get_number("eps", eps, 0.0, 1.0));
  c.eps = float(eps);
  if (auto it = j.find("guidance_embeds"); it != j.end() && !it->is_null()) {
    if (!it->is_boolean()) return invalid_file("config 'guidance_embeds' must be true or false").with_file(source);
    c.guidance_embeds = it->get<bool>();
  }
  if (auto it = j.find("axes_dims_rope"); it != j.end() && !it->is_null()) {
    if (!it->is_array() || it->empty() || it->size() > 8)
      return invalid_file("config 'axes_dims_rope' must be a list of 1 to 8 integers").with_file(source);
    c.axes_dims_rope.clear();
    for (const auto& v : *it) {
      if (!v.is_number_integer() || v.get<int64_t>() <= 0 || v.get<int64_t>() % 2 || v.get<int64_t>() > 1024)
        return invalid_file("config 'axes_dims_rope' must hold positive even integers, got ", dump_json(*it))
            .with_file(source);
      c.axes_dims_rope.push_back(v.get<int64_t>());
    }
  }
  const int64_t rope_dims = std::accumulate(c.axes_dims_rope.begin(), c.axes_dims_rope.end(), int64_t{0});
  if (rope_dims != c.attention_head_dim)
    return invalid_file("config 'axes_dims_rope' must add up to attention_head_dim")
        .with_file(source)
        .with_expected_found(str_cat(c.attention_head_dim), str_cat(rope_dims));
  if (c.mlp_hidden() < 1) return invalid_file("config: inner_dim x mlp_ratio is below 1").with_file(source);
  return c;
}

bool Flux2Bucket::operator<(const Flux2Bucket& o) const {
  return std::tie(batch, image_tokens, text_len) < std::tie(o.batch, o.image_tokens, o.text_len);
}

std::string Flux2Bucket::to_string() const {
  return str_cat("batch ", batch, ", image tokens ", image_tokens, ", text ", text_len);
}

void flux2_rope_table(const float* ids, int64_t tokens, const std::vector<int64_t>& axes_dims, double theta,
                      float* cos, float* sin) {
  int64_t pairs = 0;
  for (int64_t d : axes_dims) pairs += d / 2;
  const int64_t axes = int64_t(axes_dims.size());
  for (int64_t s = 0; s < tokens; ++s) {
    int64_t i = 0;
    for (int64_t a = 0; a < axes; ++a) {
      const double pos = double(ids[s * axes + a]);
      const int64_t dim = axes_dims[size_t(a)];
      for (int64_t j = 0; j < dim / 2; ++j, ++i) {
        const double angle = pos * (1.0 / std::pow(theta, double(2 * j) / double(dim)));
        cos[s * pairs + i] = float(std::cos(angle));
        sin[s * pairs + i] = float(std::sin(angle));
      }
    }
  }
}

Result<std::unique_ptr<Flux2Transformer>> Flux2Transformer::load(std::shared_ptr<ModelFiles> files) {
  std::unique_ptr<Flux2Transformer> m(new Flux2Transformer());
  m->files_ = files;
  const Flux2WeightReader r(*files);
  if (files->has_config()) {
    QUILL_ASSIGN_OR_RETURN(m->cfg_, Flux2Config::from_json(files->config(), files->config_path()));
  } else if (r.bfl_names()) {
    QUILL_ASSIGN_OR_RETURN(nlohmann::json inferred, r.infer_config());
    QUILL_ASSIGN_OR_RETURN(m->cfg_, Flux2Config::from_json(inferred, files->path() + " (config inferred from shapes)"));
  } else {
    return not_found("the FLUX.2 transformer has no config.json (expected beside its weights, or in a GGUF's "
                     "metadata)")
        .with_file(files->path());
  }
  m->norm_out_shift_first_ = r.norm_out_shift_first();
  const Flux2Config& c = m->cfg_;
  const int64_t D = c.inner_dim(), F = c.mlp_hidden(), C = c.timestep_guidance_channels, p = c.patch_size;
  const std::string te = "time_guidance_embed.";
  QUILL_ASSIGN_OR_RETURN(m->timestep_linear_1, r.linear(te + "timestep_embedder.linear_1", C, D));
  QUILL_ASSIGN_OR_RETURN(m->timestep_linear_2, r.linear(te + "timestep_embedder.linear_2", D, D));
  if (c.guidance_embeds) {
    QUILL_ASSIGN_OR_RETURN(m->guidance_linear_1, r.linear(te + "guidance_embedder.linear_1", C, D));
    QUILL_ASSIGN_OR_RETURN(m->guidance_linear_2, r.linear(te + "guidance_embedder.linear_2", D, D));
  }
  QUILL_ASSIGN_OR_RETURN(m->double_stream_modulation_img, r.linear("double_stream_modulation_img.linear", D, 6 * D));
  QUILL_ASSIGN_OR_RETURN(m->double_stream_modulation_txt, r.linear("double_stream_modulation_txt.linear", D, 6 * D));
  QUILL_ASSIGN_OR_RETURN(m->single_stream_modulation, r.linear("single_stream_modulation.linear", D, 3 * D));
  QUILL_ASSIGN_OR_RETURN(m->x_embedder, r.linear("x_embedder", c.in_channels, D));
  QUILL_ASSIGN_OR_RETURN(m->context_embedder, r.linear("context_embedder", c.joint_attention_dim, D));
  QUILL_ASSIGN_OR_RETURN(m->norm_out, r.linear("norm_out.linear", D, 2 * D));
  QUILL_ASSIGN_OR_RETURN(m->proj_out, r.linear("proj_out", D, p * p * c.out_channels));
  for (int64_t i = 0; i < c.num_layers; ++i) {
    QUILL_ASSIGN_OR_RETURN(Flux2DoubleBlock blk,
                           Flux2DoubleBlock::load(r, str_cat("transformer_blocks.", i), D, c.attention_head_dim, F));
    m->transformer_blocks.push_back(std::move(blk));
  }
  for (int64_t i = 0; i < c.num_single_layers; ++i) {
    QUILL_ASSIGN_OR_RETURN(
        Flux2SingleBlock blk,
        Flux2SingleBlock::load(r, str_cat("single_transformer_blocks.", i), D, c.attention_head_dim, F));
    m->single_transformer_blocks.push_back(std::move(blk));
  }
  return m;
}

Status Flux2Transformer::validate(const Flux2Bucket& b) const {
  if (b.batch <= 0 || b.batch > 1024) return invalid_argument("batch ", b.batch, " out of range [1, 1024]");
  if (b.image_tokens <= 0 || b.image_tokens > (1 << 20))
    return invalid_argument("image token count ", b.image_tokens, " out of range [1, 2^20]");
  if (b.text_len <= 0 || b.text_len > 65536) return invalid_argument("text length ", b.text_len, " out of range [1, 65536]");
  return Status::ok();
}

size_t Flux2Transformer::layout(const Flux2Bucket& b, const ThreadPool& pool, Arena* arena, Flux2Buffers* bufs) const {
  const int64_t B = b.batch, N = b.image_tokens, T = b.text_len, S = N + T;
  const int64_t D = cfg_.inner_dim(), F = cfg_.mlp_hidden(), C = cfg_.timestep_guidance_channels;
  ArenaSizer sizer;
  auto alloc = [&](auto*& ptr, int64_t floats) {
    if (arena)
      ptr = arena->allocate_n<float>(size_t(floats));
    else
      sizer.add(size_t(floats) * sizeof(float));
  };
  Flux2Buffers local;
  Flux2Buffers& o = bufs ? *bufs : local;
  Flux2BlockBuffers& k = o.blocks;
  alloc(o.tproj, B * C);
  alloc(o.gproj, B * C);
  alloc(o.temb, B * D);
  alloc(o.temb_act, B * D);
  alloc(o.tmp, B * D);
  alloc(o.mod_img, B * 6 * D);
  alloc(o.mod_txt, B * 6 * D);
  alloc(o.mod_single, B * 3 * D);
  alloc(o.mod_out, B * 2 * D);
  alloc(o.rope_cos, S * cfg_.attention_head_dim / 2);
  alloc(o.rope_sin, S * cfg_.attention_head_dim / 2);
  alloc(k.x, B * N * D);
  alloc(k.c, B * T * D);
  alloc(k.h, B * S * D);
  alloc(k.nx, B * N * D);
  alloc(k.nc, B * T * D);
  alloc(k.nh, B * S * D);
  alloc(k.q, B * S * D);
  alloc(k.k, B * S * D);
  alloc(k.v, B * S * D);
  alloc(k.attn, B * S * D);
  alloc(k.tmp_x, B * N * D);
  alloc(k.tmp_c, B * T * D);
  alloc(k.wide, std::max(B * std::max(N, T) * 2 * F, B * S * (3 * D + 2 * F)));
  alloc(k.mlp, B * S * F);
  // [attention || MLP] is built after the fused projection in `wide` has been read (q, k, v copied
  // out, SwiGLU done into `mlp`), so it reuses that memory: S x (D + F) fits in S x (3D + 2F).
  k.cat = k.wide;
  k.rope_cos = o.rope_cos;
  k.rope_sin = o.rope_sin;

  size_t lin = 0;
  for (const Linear* l : {&timestep_linear_1, &timestep_linear_2, &guidance_linear_1, &guidance_linear_2,
                          &double_stream_modulation_img, &double_stream_modulation_txt, &single_stream_modulation,
                          &x_embedder, &context_embedder, &norm_out, &proj_out})
    if (l->weight.defined()) lin = std::max(lin, op_linear_scratch_floats(l->weight, pool));
  for (const auto& blk : transformer_blocks) lin = std::max(lin, flux2_double_block_scratch(blk, pool));
  for (const auto& blk : single_transformer_blocks) lin = std::max(lin, flux2_single_block_scratch(blk, pool));
  o.scratch.linear_floats = lin;
  o.scratch.attention_floats = op_attention_scratch_floats(S, cfg_.attention_head_dim, pool);
  alloc(o.scratch.linear, int64_t(lin));
  alloc(o.scratch.attention, int64_t(o.scratch.attention_floats));
  return arena ? arena->used() : sizer.peak();
}

// Flux2TimestepGuidanceEmbeddings: Timesteps(flip_sin_to_cos) of sigma x 1000, then a SiLU MLP;
// plus the same of the guidance scale when the model embeds guidance. temb_act = SiLU(temb) feeds
// every modulation linear.
Status Flux2Transformer::time_guidance_embed(const Flux2Bucket& b, const Flux2Inputs& in, Flux2Buffers& w,
                                             Dispatcher& ops) const {
  const int64_t B = b.batch, D = cfg_.inner_dim(), C = cfg_.timestep_guidance_channels;
  auto embed = [&](const float* values, float* proj, const Linear& l1, const Linear& l2, float* out) -> Status {
    for (int64_t n = 0; n < B; ++n) w.tmp[n] = values[n] * 1000.0f;  // f32, as diffusers scales it
    timestep_sinusoid(w.tmp, B, C, proj);
    QUILL_RETURN_IF_ERROR(ops.linear(proj, B, l1.weight, nullptr, w.temb_act));
    QUILL_RETURN_IF_ERROR(ops.silu(w.temb_act, B * D));
    return ops.linear(w.temb_act, B, l2.weight, nullptr, out);
  };
  QUILL_RETURN_IF_ERROR(embed(in.timestep, w.tproj, timestep_linear_1, timestep_linear_2, w.temb));
  if (in.guidance && cfg_.guidance_embeds) {
    QUILL_RETURN_IF_ERROR(embed(in.guidance, w.gproj, guidance_linear_1, guidance_linear_2, w.tmp));
    QUILL_RETURN_IF_ERROR(ops.add(w.temb, w.tmp, B, D, B));
  }
  std::memcpy(w.temb_act, w.temb, size_t(B * D) * sizeof(float));
  return ops.silu(w.temb_act, B * D);
}

Status Flux2Transformer::forward(const Flux2Bucket& b, const Flux2Inputs& in, float* sample, Flux2Buffers& w,
                                 Dispatcher& ops) const {
  const int64_t B = b.batch, N = b.image_tokens, T = b.text_len, S = N + T, D = cfg_.inner_dim();
  const int64_t pairs = cfg_.attention_head_dim / 2;
  if (!in.hidden_states || !in.encoder_hidden_states || !in.timestep || !in.img_ids || !in.txt_ids)
    return invalid_argument("FLUX.2 forward: hidden_states, encoder_hidden_states, timestep, img_ids and txt_ids "
                            "are required");
  ops.set_scratch(w.scratch);
  Flux2BlockBuffers& k = w.blocks;

  QUILL_RETURN_IF_ERROR(time_guidance_embed(b, in, w, ops));
  // Flux2Modulation (shared by every block of a kind) and norm_out's AdaLayerNormContinuous linear.
  QUILL_RETURN_IF_ERROR(ops.linear(w.temb_act, B, double_stream_modulation_img.weight, nullptr, w.mod_img));
  QUILL_RETURN_IF_ERROR(ops.linear(w.temb_act, B, double_stream_modulation_txt.weight, nullptr, w.mod_txt));
  QUILL_RETURN_IF_ERROR(ops.linear(w.temb_act, B, single_stream_modulation.weight, nullptr, w.mod_single));
  QUILL_RETURN_IF_ERROR(ops.linear(w.temb_act, B, norm_out.weight, nullptr, w.mod_out));

  QUILL_RETURN_IF_ERROR(ops.linear(in.hidden_states, B * N, x_embedder.weight, nullptr, k.x));
  QUILL_RETURN_IF_ERROR(ops.linear(in.encoder_hidden_states, B * T, context_embedder.weight, nullptr, k.c));

  // Flux2PosEmbed for the joint sequence [text, image].
  flux2_rope_table(in.txt_ids, T, cfg_.axes_dims_rope, cfg_.rope_theta, w.rope_cos, w.rope_sin);
  flux2_rope_table(in.img_ids, N, cfg_.axes_dims_rope, cfg_.rope_theta, w.rope_cos + T * pairs,
                   w.rope_sin + T * pairs);

  const Flux2Shape shape{B, N, T, D, cfg_.num_attention_heads, cfg_.attention_head_dim, cfg_.mlp_hidden(), cfg_.eps};
  for (const auto& blk : transformer_blocks)
    QUILL_RETURN_IF_ERROR(run_flux2_double_block(blk, shape, k, w.mod_img, w.mod_txt, ops));

  // torch.cat([encoder_hidden_states, hidden_states], dim=1) for the single-stream blocks.
  for (int64_t n = 0; n < B; ++n) {
    std::memcpy(k.h + n * S * D, k.c + n * T * D, size_t(T * D) * sizeof(float));
    std::memcpy(k.h + n * S * D + T * D, k.x + n * N * D, size_t(N * D) * sizeof(float));
  }
  for (const auto& blk : single_transformer_blocks)
    QUILL_RETURN_IF_ERROR(run_flux2_single_block(blk, shape, k, w.mod_single, ops));

  // The image tokens through norm_out (diffusers: scale first, then shift; BFL: the other way) and proj_out.
  for (int64_t n = 0; n < B; ++n) {
    const float* mod = w.mod_out + n * 2 * D;
    const float* shift = norm_out_shift_first_ ? mod : mod + D;
    const float* scale = norm_out_shift_first_ ? mod + D : mod;
    QUILL_RETURN_IF_ERROR(
        ops.layer_norm_modulate(k.h + n * S * D + T * D, k.nx + n * N * D, 1, N, D, cfg_.eps, shift, scale, 2 * D));
  }
  return ops.linear(k.nx, B * N, proj_out.weight, nullptr, sample);
}

}  // namespace quill
