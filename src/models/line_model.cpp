#include "models/line_model.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "core/arena.h"
#include "io/json_util.h"
#include "models/dit_common.h"

namespace quill {

namespace {
constexpr float kEps = 1e-6f;
}  // namespace

Result<LineModelConfig> LineModelConfig::from_json(const nlohmann::json& j, const std::string& source) {
  if (!j.is_object()) return invalid_file("config is not a JSON object").with_file(source);
  LineModelConfig c;
  auto get = [&](const char* key, int64_t& field, int64_t lo, int64_t hi) -> Status {
    auto it = j.find(key);
    if (it == j.end()) return Status::ok();
    if (!it->is_number_integer()) return invalid_file("config '", key, "' must be an integer").with_file(source);
    field = it->get<int64_t>();
    if (field < lo || field > hi)
      return invalid_file("config '", key, "' = ", field, " out of range [", lo, ", ", hi, "]").with_file(source);
    return Status::ok();
  };
  QUILL_RETURN_IF_ERROR(get("line_height", c.line_height, 1, 4096));
  QUILL_RETURN_IF_ERROR(get("max_line_width", c.max_line_width, 16, 1 << 16));
  QUILL_RETURN_IF_ERROR(get("in_channels", c.in_channels, 1, 256));
  QUILL_RETURN_IF_ERROR(get("out_channels", c.out_channels, 1, 256));
  QUILL_RETURN_IF_ERROR(get("downscale", c.downscale, 1, 64));
  QUILL_RETURN_IF_ERROR(get("glyph_channels", c.glyph_channels, 1, 16));
  QUILL_RETURN_IF_ERROR(get("patch_size", c.patch_size, 1, 64));
  QUILL_RETURN_IF_ERROR(get("num_layers", c.num_layers, 1, 256));
  QUILL_RETURN_IF_ERROR(get("num_attention_heads", c.num_attention_heads, 1, 256));
  QUILL_RETURN_IF_ERROR(get("attention_head_dim", c.attention_head_dim, 4, 1024));
  QUILL_RETURN_IF_ERROR(get("style_dim", c.style_dim, 1, 1 << 16));
  if (auto it = j.find("rope_theta"); it != j.end()) {
    // theta <= 0 or not finite makes every RoPE frequency NaN or Inf: a black line, not an error, later.
    if (!it->is_number() || !(it->get<double>() > 0.0) || !std::isfinite(it->get<double>()))
      return invalid_file("config 'rope_theta' must be a finite number > 0, got ", dump_json(*it)).with_file(source);
    c.rope_theta = it->get<double>();
  }
  if (auto it = j.find("qk_norm"); it != j.end()) {
    if (it->is_null())
      c.qk_rms_norm = false;
    else if (it->is_string() && it->get<std::string>() == "rms_norm")
      c.qk_rms_norm = true;
    else
      return unsupported("qk_norm ", dump_json(*it), " (supported: null, \"rms_norm\")").with_file(source);
  }
  if (auto it = j.find("glyph_concat"); it != j.end()) {
    if (!it->is_boolean()) return invalid_file("config 'glyph_concat' must be true or false").with_file(source);
    c.glyph_concat = it->get<bool>();
  }
  if (c.attention_head_dim % 4)
    return invalid_file("attention_head_dim must be a multiple of 4 for 2D RoPE").with_file(source);
  // Canvas widths are multiples of 16 (text/width_bucket.h): every one must split into whole tokens.
  if (c.downscale * c.patch_size > 16 || 16 % (c.downscale * c.patch_size))
    return invalid_file("downscale x patch_size = ", c.downscale * c.patch_size,
                        " must divide 16 (line canvases are multiples of 16 pixels wide)")
        .with_file(source);
  if (c.max_line_width % 16)
    return invalid_file("max_line_width ", c.max_line_width, " must be a multiple of 16").with_file(source);
  if (c.line_height % c.downscale || c.latent_height() % c.patch_size)
    return invalid_file("line_height ", c.line_height, " must be divisible by downscale x patch_size (", c.downscale,
                        " x ", c.patch_size, ")")
        .with_file(source);
  return c;
}

std::string LineBucket::to_string() const { return str_cat("batch ", batch, ", latent width ", latent_w); }

void line_rope_tables(int64_t h_tok, int64_t w_tok, int64_t head_dim, double theta, float* cos, float* sin) {
  const int64_t quarter = head_dim / 4, pairs = head_dim / 2;
  auto fill = [&](int64_t s, double row, double col) {
    for (int64_t i = 0; i < quarter; ++i) {
      const double f = std::pow(theta, -double(i) / double(quarter));
      cos[s * pairs + i] = float(std::cos(row * f));
      sin[s * pairs + i] = float(std::sin(row * f));
      cos[s * pairs + quarter + i] = float(std::cos(col * f));
      sin[s * pairs + quarter + i] = float(std::sin(col * f));
    }
  };
  for (int64_t r = 0; r < h_tok; ++r)
    for (int64_t c = 0; c < w_tok; ++c) fill(r * w_tok + c, double(r), double(c));
  for (int64_t c = 0; c < w_tok; ++c) fill(h_tok * w_tok + c, 0.0, double(c));
}

Result<std::unique_ptr<LineModel>> LineModel::load(std::shared_ptr<ModelFiles> files) {
  std::unique_ptr<LineModel> m(new LineModel());
  m->files_ = files;
  // Defaults for every field exist, but weights read with a guessed shape only fail later with a
  // "shape mismatch" that hides the cause.
  if (!files->has_config())
    return not_found("the line model has no config.json (expected beside its weights, or in a GGUF's metadata)")
        .with_file(files->path());
  QUILL_ASSIGN_OR_RETURN(m->cfg_, LineModelConfig::from_json(files->config(), files->config_path()));
  const LineModelConfig& c = m->cfg_;
  const int64_t D = c.inner_dim(), p = c.patch_size;
  const ModelFiles& f = *files;
  QUILL_ASSIGN_OR_RETURN(m->x_embedder, load_linear(f, "x_embedder", c.x_embed_channels() * p * p, D, true));
  QUILL_ASSIGN_OR_RETURN(m->content_embedder,
                         load_linear(f, "content_embedder", c.glyph_channels * c.latent_height() * p, D, true));
  QUILL_ASSIGN_OR_RETURN(m->time_text_embed, TimeTextEmbed::load(f, D, c.style_dim));
  QUILL_ASSIGN_OR_RETURN(m->norm_out, load_linear(f, "norm_out.linear", D, 2 * D, true));
  QUILL_ASSIGN_OR_RETURN(m->proj_out, load_linear(f, "proj_out", D, p * p * c.out_channels, true));
  for (int64_t i = 0; i < c.num_layers; ++i) {
    QUILL_ASSIGN_OR_RETURN(JointBlock blk,
                           JointBlock::load(f, str_cat("transformer_blocks.", i), D, c.attention_head_dim,
                                            i == c.num_layers - 1, false, c.qk_rms_norm));
    m->blocks.push_back(std::move(blk));
  }
  return m;
}

Status LineModel::validate(const LineBucket& b) const {
  if (b.batch <= 0 || b.batch > 1024) return invalid_argument("batch ", b.batch, " out of range [1, 1024]");
  const int64_t max_w = cfg_.max_line_width / cfg_.downscale;
  if (b.latent_w <= 0 || b.latent_w % cfg_.patch_size || b.latent_w > max_w)
    return invalid_argument("latent width ", b.latent_w, " must be a positive multiple of patch_size ", cfg_.patch_size,
                            " and at most ", max_w, " (max_line_width ", cfg_.max_line_width, ")");
  return Status::ok();
}

size_t LineModel::layout(const LineBucket& b, const ThreadPool& pool, Arena* arena, LineBuffers* bufs) const {
  const int64_t B = b.batch, p = cfg_.patch_size, D = cfg_.inner_dim(), Hl = cfg_.latent_height();
  const int64_t ht = Hl / p, wt = b.latent_w / p, N = ht * wt, T = wt, S = N + T;
  ArenaSizer sizer;
  auto alloc = [&](float*& ptr, int64_t floats) {
    if (arena)
      ptr = arena->allocate_n<float>(size_t(floats));
    else
      sizer.add(size_t(floats) * sizeof(float));
  };
  LineBuffers local;
  LineBuffers& o = bufs ? *bufs : local;
  JointBuffers& j = o.joint;
  alloc(j.x, B * N * D);
  alloc(j.c, B * T * D);
  alloc(j.temb_act, B * D);
  alloc(j.mod_x, B * 6 * D);
  alloc(j.mod_c, B * 6 * D);
  alloc(j.nx, B * N * D);
  j.nx2 = nullptr;
  alloc(j.nc, B * T * D);
  alloc(j.q, B * S * D);
  alloc(j.k, B * S * D);
  alloc(j.v, B * S * D);
  alloc(j.attn, B * S * D);
  alloc(j.tmp_x, B * N * D);
  alloc(j.tmp_c, B * T * D);
  // ff also holds a ragged batch's gathered q, k, v during attention (JointKeyMask).
  alloc(j.ff, std::max(B * std::max(N, T) * 4 * D, 3 * B * S * D));
  alloc(o.temb, B * D);
  alloc(o.tproj, B * TimeTextEmbed::kTimeChannels);
  alloc(o.pooled_h, B * D);
  alloc(o.patches, B * N * cfg_.x_embed_channels() * p * p);
  alloc(o.columns, B * T * cfg_.glyph_channels * Hl * p);
  alloc(o.out, B * N * p * p * cfg_.out_channels);
  alloc(o.rope_cos, S * cfg_.attention_head_dim / 2);
  alloc(o.rope_sin, S * cfg_.attention_head_dim / 2);
  size_t lin = 0;
  for (const Linear* l : {&x_embedder, &content_embedder, &norm_out, &proj_out})
    lin = std::max(lin, op_linear_scratch_floats(l->weight, pool));
  lin = std::max(lin, time_text_embed.linear_scratch_floats(pool));
  for (const JointBlock& blk : blocks) lin = std::max(lin, joint_block_linear_scratch(blk, pool));
  o.scratch.linear_floats = lin;
  o.scratch.attention_floats = op_attention_scratch_floats(S, cfg_.attention_head_dim, pool);
  alloc(o.scratch.linear, int64_t(lin));
  alloc(o.scratch.attention, int64_t(o.scratch.attention_floats));
  if (arena) {
    o.perm = arena->allocate_n<int32_t>(size_t(B * S));
    o.valid = arena->allocate_n<int32_t>(size_t(B));
  } else {
    sizer.add(size_t(B * S + B) * sizeof(int32_t));
  }
  // The rotary tables depend only on the bucket: compute them once, here, when the plan is built.
  if (arena) line_rope_tables(ht, wt, cfg_.attention_head_dim, cfg_.rope_theta, o.rope_cos, o.rope_sin);
  return arena ? arena->used() : sizer.peak();
}

Status LineModel::forward(const LineBucket& b, const float* hidden_states, const float* glyphs, const float* style,
                          const float* timestep, float* sample, LineBuffers& w, Dispatcher& ops) const {
  return forward(b, hidden_states, glyphs, style, timestep, sample, nullptr, w, ops);
}

Status LineModel::forward(const LineBucket& b, const float* hidden_states, const float* glyphs, const float* style,
                          const float* timestep, float* sample, const int32_t* row_tokens, LineBuffers& w,
                          Dispatcher& ops) const {
  const int64_t B = b.batch, p = cfg_.patch_size, D = cfg_.inner_dim(), Hl = cfg_.latent_height(), W = b.latent_w;
  const int64_t ht = Hl / p, wt = W / p, N = ht * wt, T = wt, G = cfg_.glyph_channels;
  const JointBuffers& j = w.joint;
  ops.set_scratch(w.scratch);

  // time_text_embed(timestep, style): temb [B, D] and SiLU(temb) for the adaLN linears.
  QUILL_RETURN_IF_ERROR(time_text_embed.forward(timestep, style, B, w.tproj, w.pooled_h, w.temb, j.temb_act, ops));

  // Image tokens: patches [B, N, C'*p*p] -> x [B, N, D]; C' = C (+ G when the glyph line is
  // concatenated as extra channels).
  const int64_t row = cfg_.x_embed_channels() * p * p;
  patchify(hidden_states, B, cfg_.in_channels, Hl, W, p, w.patches, row, 0);
  if (cfg_.glyph_concat) patchify(glyphs, B, G, Hl, W, p, w.patches, row, cfg_.in_channels);
  QUILL_RETURN_IF_ERROR(ops.linear(w.patches, B * N, x_embedder.weight, x_embedder.bias_ptr(), j.x));
  // Content tokens: glyph column j = glyphs[:, :, :, j*p:(j+1)*p] in (g, y, kx) order -> c [B, T, D].
  const int64_t col = G * Hl * p;
  for (int64_t n = 0; n < B; ++n)
    for (int64_t c = 0; c < wt; ++c) {
      float* dst = w.columns + (n * wt + c) * col;
      for (int64_t g = 0; g < G; ++g)
        for (int64_t y = 0; y < Hl; ++y)
          std::memcpy(dst + (g * Hl + y) * p, glyphs + ((n * G + g) * Hl + y) * W + c * p, size_t(p) * sizeof(float));
    }
  QUILL_RETURN_IF_ERROR(ops.linear(w.columns, B * T, content_embedder.weight, content_embedder.bias_ptr(), j.c));

  const JointShape shape{B, N, T, D, cfg_.num_attention_heads, cfg_.attention_head_dim};
  const RopeTable rope{w.rope_cos, w.rope_sin, cfg_.attention_head_dim / 2};
  // Ragged rows: real image tokens (y, x < cols) and real content tokens (x < cols) first.
  JointKeyMask mask;
  bool ragged = false;
  if (row_tokens)
    for (int64_t n = 0; n < B; ++n) {
      if (row_tokens[n] < 1 || row_tokens[n] > wt)
        return invalid_argument("row ", n, " has ", row_tokens[n], " token columns; the bucket has ", wt);
      ragged = ragged || row_tokens[n] != wt;
    }
  if (ragged) {
    const int64_t S = N + T;
    for (int64_t n = 0; n < B; ++n) {
      int32_t* perm = w.perm + n * S;
      int64_t k = 0;
      for (int64_t y = 0; y < ht; ++y)
        for (int64_t x = 0; x < row_tokens[n]; ++x) perm[k++] = int32_t(y * wt + x);
      for (int64_t x = 0; x < row_tokens[n]; ++x) perm[k++] = int32_t(N + x);
      w.valid[n] = int32_t(k);
      for (int64_t y = 0; y < ht; ++y)
        for (int64_t x = row_tokens[n]; x < wt; ++x) perm[k++] = int32_t(y * wt + x);
      for (int64_t x = row_tokens[n]; x < wt; ++x) perm[k++] = int32_t(N + x);
    }
    mask = {w.perm, w.valid, j.ff, j.ff + B * S * D, j.ff + 2 * B * S * D, j.q};
  }
  for (const JointBlock& blk : blocks)
    QUILL_RETURN_IF_ERROR(run_joint_block(blk, shape, j, ops, &rope, ragged ? &mask : nullptr));

  QUILL_RETURN_IF_ERROR(ops.linear(j.temb_act, B, norm_out.weight, norm_out.bias_ptr(), j.mod_x));
  QUILL_RETURN_IF_ERROR(ops.layer_norm_modulate(j.x, j.nx, B, N, D, kEps, j.mod_x + D, j.mod_x, 2 * D));
  QUILL_RETURN_IF_ERROR(ops.linear(j.nx, B * N, proj_out.weight, proj_out.bias_ptr(), w.out));
  unpatchify(w.out, B, cfg_.out_channels, Hl, W, p, sample);
  return Status::ok();
}

}  // namespace quill
