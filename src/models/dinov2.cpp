#include "models/dinov2.h"

#include <algorithm>
#include <cmath>
#include <cstring>

namespace quill {

// ---- config ----

namespace {

Status read_int(const nlohmann::json& j, const char* key, const std::string& source, int64_t* v) {
  auto it = j.find(key);
  if (it == j.end()) return Status();
  if (!it->is_number_integer()) return invalid_file("config key '", key, "' is not an integer").with_file(source);
  *v = it->get<int64_t>();
  return Status();
}

// image_size / patch_size: an int or [h, w].
Status read_pair(const nlohmann::json& j, const char* key, const std::string& source, int64_t* h, int64_t* w) {
  auto it = j.find(key);
  if (it == j.end()) return Status();
  if (it->is_number_integer()) {
    *h = *w = it->get<int64_t>();
    return Status();
  }
  if (it->is_array() && it->size() == 2 && (*it)[0].is_number_integer() && (*it)[1].is_number_integer()) {
    *h = (*it)[0].get<int64_t>();
    *w = (*it)[1].get<int64_t>();
    return Status();
  }
  return invalid_file("config key '", key, "' must be an integer or [height, width]").with_file(source);
}

Status read_number(const nlohmann::json& j, const char* key, const std::string& source, double* v) {
  auto it = j.find(key);
  if (it == j.end()) return Status();
  if (!it->is_number()) return invalid_file("config key '", key, "' is not a number").with_file(source);
  *v = it->get<double>();
  return Status();
}

Status read_bool(const nlohmann::json& j, const char* key, const std::string& source, bool* v) {
  auto it = j.find(key);
  if (it == j.end()) return Status();
  if (!it->is_boolean()) return invalid_file("config key '", key, "' is not a boolean").with_file(source);
  *v = it->get<bool>();
  return Status();
}

}  // namespace

int64_t Dinov2Config::mlp_hidden() const {
  // Python: int(hidden_size * mlp_ratio), then for SwiGLU (int(h * 2 / 3) + 7) // 8 * 8.
  const auto h = static_cast<int64_t>(static_cast<double>(hidden_size) * mlp_ratio);
  if (!use_swiglu_ffn) return h;
  return (static_cast<int64_t>(static_cast<double>(h * 2) / 3.0) + 7) / 8 * 8;
}

Result<Dinov2Config> Dinov2Config::from_json(const nlohmann::json& j, const std::string& source) {
  Dinov2Config c;
  QUILL_RETURN_IF_ERROR(read_int(j, "hidden_size", source, &c.hidden_size));
  QUILL_RETURN_IF_ERROR(read_int(j, "num_hidden_layers", source, &c.num_hidden_layers));
  QUILL_RETURN_IF_ERROR(read_int(j, "num_attention_heads", source, &c.num_attention_heads));
  QUILL_RETURN_IF_ERROR(read_int(j, "num_channels", source, &c.num_channels));
  QUILL_RETURN_IF_ERROR(read_pair(j, "patch_size", source, &c.patch_h, &c.patch_w));
  QUILL_RETURN_IF_ERROR(read_pair(j, "image_size", source, &c.image_h, &c.image_w));
  QUILL_RETURN_IF_ERROR(read_number(j, "mlp_ratio", source, &c.mlp_ratio));
  QUILL_RETURN_IF_ERROR(read_number(j, "layer_norm_eps", source, &c.layer_norm_eps));
  QUILL_RETURN_IF_ERROR(read_bool(j, "qkv_bias", source, &c.qkv_bias));
  QUILL_RETURN_IF_ERROR(read_bool(j, "use_swiglu_ffn", source, &c.use_swiglu_ffn));
  if (c.hidden_size <= 0 || c.num_hidden_layers < 0 || c.num_attention_heads <= 0 || c.num_channels <= 0 ||
      c.patch_h <= 0 || c.patch_w <= 0 || c.image_h < c.patch_h || c.image_w < c.patch_w || !(c.mlp_ratio > 0) ||
      !(c.layer_norm_eps >= 0))
    return invalid_file("Dinov2 config has a non-positive size, an image_size smaller than patch_size or a bad eps")
        .with_file(source);
  // Bounds far above any released Dinov2 (giant: hidden 1536, 40 layers, 24 heads), so derived sizes
  // (heads x head_dim, hidden x mlp_ratio, the patch grid) cannot overflow.
  auto at_most = [&](const char* key, double v, double max) -> Status {
    if (!(v <= max)) return invalid_file("Dinov2 config '", key, "' = ", v, " is above ", max).with_file(source);
    return Status();
  };
  QUILL_RETURN_IF_ERROR(at_most("hidden_size", double(c.hidden_size), 1 << 16));
  QUILL_RETURN_IF_ERROR(at_most("num_hidden_layers", double(c.num_hidden_layers), 1024));
  QUILL_RETURN_IF_ERROR(at_most("num_attention_heads", double(c.num_attention_heads), 1024));
  QUILL_RETURN_IF_ERROR(at_most("num_channels", double(c.num_channels), 64));
  QUILL_RETURN_IF_ERROR(at_most("patch_size", double(std::max(c.patch_h, c.patch_w)), 1024));
  QUILL_RETURN_IF_ERROR(at_most("image_size", double(std::max(c.image_h, c.image_w)), 1 << 14));
  QUILL_RETURN_IF_ERROR(at_most("mlp_ratio", c.mlp_ratio, 64));
  QUILL_RETURN_IF_ERROR(at_most("layer_norm_eps", c.layer_norm_eps, 1));
  // Dinov2Attention: getattr(config, "head_dim", hidden_size // num_attention_heads).
  c.head_dim = c.hidden_size / c.num_attention_heads;
  QUILL_RETURN_IF_ERROR(read_int(j, "head_dim", source, &c.head_dim));
  if (c.head_dim <= 0) return invalid_file("Dinov2 config: head_dim must be positive").with_file(source);
  QUILL_RETURN_IF_ERROR(at_most("head_dim", double(c.head_dim), 4096));
  if (c.mlp_hidden() <= 0) return invalid_file("Dinov2 config: MLP hidden size is 0").with_file(source);

  if (auto it = j.find("hidden_act"); it != j.end()) {
    if (!it->is_string()) return invalid_file("config key 'hidden_act' is not a string").with_file(source);
    c.hidden_act = it->get<std::string>();
  }
  // transformers' ACT2FN names.
  if (c.hidden_act == "gelu")
    c.act = Dinov2Act::kGeluErf;
  else if (c.hidden_act == "gelu_pytorch_tanh" || c.hidden_act == "gelu_new")
    c.act = Dinov2Act::kGeluTanh;
  else if (c.hidden_act == "silu" || c.hidden_act == "swish")
    c.act = Dinov2Act::kSilu;
  else if (c.hidden_act == "relu")
    c.act = Dinov2Act::kRelu;
  else if (!c.use_swiglu_ffn)  // SwiGLU ignores hidden_act
    return unsupported("Dinov2 hidden_act '", c.hidden_act,
                       "' (supported: gelu, gelu_pytorch_tanh, gelu_new, silu, relu)")
        .with_file(source);
  return c;
}

// ---- loading ----

namespace {

// The first of `names` whose `.weight` the files hold; the first (the save_pretrained name) when
// none does, so the load error names it.
std::string pick(const ModelFiles& files, std::initializer_list<std::string> names) {
  for (const auto& n : names)
    if (files.has(n + ".weight")) return n;
  return *names.begin();
}

}  // namespace

Result<std::unique_ptr<Dinov2Model>> Dinov2Model::load(std::shared_ptr<ModelFiles> files) {
  if (!files) return invalid_argument("Dinov2Encoder::load: no model files");
  auto m = std::make_unique<Dinov2Model>();
  m->files_ = files;
  const ModelFiles& f = *files;
  if (!f.has_config()) return invalid_file("Dinov2 model has no config.json").with_file(f.path());
  QUILL_ASSIGN_OR_RETURN(m->cfg_, Dinov2Config::from_json(f.config(), f.path()));
  const Dinov2Config& c = m->cfg_;
  const int64_t D = c.hidden_size, I = c.inner_dim(), F = c.mlp_hidden();

  QUILL_ASSIGN_OR_RETURN(
      m->patch_proj, load_linear(f, "embeddings.patch_embeddings.projection", c.num_channels * c.patch_h * c.patch_w, D,
                                 /*bias=*/true, /*flatten_conv=*/true));
  QUILL_ASSIGN_OR_RETURN(m->cls_token, load_f32(f, "embeddings.cls_token", {1, 1, D}));
  m->num_positions = c.grid_h() * c.grid_w();
  QUILL_ASSIGN_OR_RETURN(m->position_embeddings,
                         load_f32(f, "embeddings.position_embeddings", {1, 1 + m->num_positions, D}));

  for (int64_t i = 0; i < c.num_hidden_layers; ++i) {
    const std::string p = str_cat("encoder.layer.", i, ".");
    Dinov2Layer L;
    QUILL_ASSIGN_OR_RETURN(L.norm1_w, load_f32(f, p + "norm1.weight", {D}));
    QUILL_ASSIGN_OR_RETURN(L.norm1_b, load_f32(f, p + "norm1.bias", {D}));
    QUILL_ASSIGN_OR_RETURN(L.norm2_w, load_f32(f, p + "norm2.weight", {D}));
    QUILL_ASSIGN_OR_RETURN(L.norm2_b, load_f32(f, p + "norm2.bias", {D}));
    QUILL_ASSIGN_OR_RETURN(L.lambda1, load_f32(f, p + "layer_scale1.lambda1", {D}));
    QUILL_ASSIGN_OR_RETURN(L.lambda2, load_f32(f, p + "layer_scale2.lambda1", {D}));
    QUILL_ASSIGN_OR_RETURN(
        L.q, load_linear(f, pick(f, {p + "attention.attention.query", p + "attention.q_proj"}), D, I, c.qkv_bias));
    QUILL_ASSIGN_OR_RETURN(
        L.k, load_linear(f, pick(f, {p + "attention.attention.key", p + "attention.k_proj"}), D, I, c.qkv_bias));
    QUILL_ASSIGN_OR_RETURN(
        L.v, load_linear(f, pick(f, {p + "attention.attention.value", p + "attention.v_proj"}), D, I, c.qkv_bias));
    QUILL_ASSIGN_OR_RETURN(L.o,
                           load_linear(f, pick(f, {p + "attention.output.dense", p + "attention.o_proj"}), I, D, true));
    if (!c.use_swiglu_ffn) {
      QUILL_ASSIGN_OR_RETURN(L.fc1, load_linear(f, p + "mlp.fc1", D, F, true));
      QUILL_ASSIGN_OR_RETURN(L.fc2, load_linear(f, p + "mlp.fc2", F, D, true));
    } else {
      if (!f.has(p + "mlp.weights_in.weight") && f.has(p + "mlp.gate_proj.weight")) {
        QUILL_ASSIGN_OR_RETURN(L.fc1, load_linear(f, p + "mlp.gate_proj", D, F, true));
        QUILL_ASSIGN_OR_RETURN(L.up, load_linear(f, p + "mlp.up_proj", D, F, true));
      } else {
        // transformers chunks weights_in in two along dim 0: gate first, then up.
        QUILL_ASSIGN_OR_RETURN(L.fc1, load_linear(f, p + "mlp.weights_in", D, 2 * F, true));
      }
      QUILL_ASSIGN_OR_RETURN(L.fc2, load_linear(f, pick(f, {p + "mlp.weights_out", p + "mlp.down_proj"}), F, D, true));
    }
    m->layers.push_back(std::move(L));
  }
  QUILL_ASSIGN_OR_RETURN(m->final_norm_w, load_f32(f, "layernorm.weight", {D}));
  QUILL_ASSIGN_OR_RETURN(m->final_norm_b, load_f32(f, "layernorm.bias", {D}));

  return m;
}

Result<std::unique_ptr<Dinov2Encoder>> Dinov2Encoder::load(std::shared_ptr<ModelFiles> files, ThreadPool& pool) {
  QUILL_ASSIGN_OR_RETURN(auto model, Dinov2Model::load(std::move(files)));
  return std::unique_ptr<Dinov2Encoder>(
      new Dinov2Encoder(std::make_unique<Engine<Dinov2Model>>(std::move(model), pool)));
}

// ---- forward ----

std::string Dinov2Bucket::to_string() const { return str_cat("dinov2 b", batch, " ", height, "x", width); }

int64_t Dinov2Encoder::sequence_length(int64_t H, int64_t W) const {
  return 1 + (H / config().patch_h) * (W / config().patch_w);
}

size_t Dinov2Model::layout(const Bucket& bk, const ThreadPool& pool, Arena* arena, Buffers* bufs) const {
  const auto& c = cfg_;
  const int64_t B = bk.batch, N = (bk.height / c.patch_h) * (bk.width / c.patch_w), S = 1 + N;
  const int64_t D = c.hidden_size, I = c.inner_dim(), F = c.mlp_hidden(), M = B * S;
  ArenaSizer sizer;
  auto take = [&](float*& p, int64_t floats) {
    const size_t bytes = static_cast<size_t>(floats) * sizeof(float);
    sizer.add(bytes);
    if (arena) p = static_cast<float*>(arena->allocate(bytes));
  };
  Buffers b;
  take(b.patches, B * N * c.num_channels * c.patch_h * c.patch_w);
  take(b.pos, S * D);
  take(b.x, M * D);
  take(b.h, M * D);
  take(b.q, M * I);
  take(b.k, M * I);
  take(b.v, M * I);
  take(b.attn, M * I);
  take(b.tmp, M * D);
  take(b.ff, M * F * (c.use_swiglu_ffn ? 2 : 1));
  take(b.ff_act, c.use_swiglu_ffn ? M * F : 0);
  take(b.out, M * D);
  size_t lin = op_linear_scratch_floats(patch_proj.weight, pool);
  for (const auto& L : layers)
    for (const Linear* l : {&L.q, &L.k, &L.v, &L.o, &L.fc1, &L.fc2, L.up ? &*L.up : nullptr})
      if (l) lin = std::max(lin, op_linear_scratch_floats(l->weight, pool));
  b.scratch.linear_floats = lin;
  b.scratch.attention_floats = op_attention_scratch_floats(S, c.head_dim, pool);
  take(b.scratch.linear, static_cast<int64_t>(lin));
  take(b.scratch.attention, static_cast<int64_t>(b.scratch.attention_floats));
  if (bufs) *bufs = b;
  return sizer.peak() + Arena::kAlign;
}

Status Dinov2Model::validate(const Bucket& b) const {
  const int64_t B = b.batch, H = b.height, W = b.width;
  if (B < 1) return invalid_argument("Dinov2 encode: batch must be at least 1, got ", B);
  if (H < cfg_.patch_h || W < cfg_.patch_w)
    return invalid_argument("Dinov2 encode: image ", H, "x", W, " is smaller than one ", cfg_.patch_h, "x",
                            cfg_.patch_w, " patch");
  return Status();
}

Status Dinov2Model::position_table(int64_t H, int64_t W, int64_t gh, int64_t gw, float* pos, Dispatcher& ops) const {
  const int64_t D = cfg_.hidden_size, P = num_positions;
  // interpolate_pos_encoding: the table is used as is only for a square image with as many
  // patches as positions; otherwise its patch part is resized to the grid (even to the same grid).
  if (gh * gw == P && H == W) {
    std::memcpy(pos, position_embeddings.data(), static_cast<size_t>((1 + P) * D) * sizeof(float));
    return Status();
  }
  // transformers reshapes the table to a sqrt(P) x sqrt(P) square.
  const auto side = static_cast<int64_t>(std::sqrt(static_cast<double>(P)));
  if (side * side != P)
    return unsupported("Dinov2 encode: resizing a non-square position table (", P, " positions) to ", gh, "x", gw)
        .with_file(files_->path());
  std::memcpy(pos, position_embeddings.data(), static_cast<size_t>(D) * sizeof(float));  // class position
  // Resized in f32 (transformers resizes in float32 and casts back to the table's dtype; Quill's
  // activations are f32, so there is nothing to cast back to).
  return ops.resize_bicubic(position_embeddings.data() + D, side, side, D, pos + D, gh, gw);
}

Status Dinov2Encoder::encode(const Tensor& pixels, float* pooled, float* last_hidden) {
  if (pixels.rank() != 4 || pixels.dtype() != DType::kF32 || !pixels.is_contiguous())
    return invalid_argument("Dinov2 encode: pixels must be a contiguous f32 [B, C, H, W] tensor")
        .with_expected_found("f32[B, C, H, W]", pixels.describe());
  return encode(pixels.data_as<const float>(), pixels.dim(0), pixels.dim(1), pixels.dim(2), pixels.dim(3), pooled,
                last_hidden);
}

Status Dinov2Encoder::encode(const float* pixels, int64_t B, int64_t C, int64_t H, int64_t W, float* pooled,
                             float* last_hidden) {
  const Dinov2Config& c = config();
  if (C != c.num_channels)
    return invalid_argument("Dinov2 encode: wrong number of image channels")
        .with_expected_found(std::to_string(c.num_channels), std::to_string(C));
  if (!pixels || !pooled) return invalid_argument("Dinov2 encode: null pixels or pooled output");
  const Dinov2Bucket bucket{B, H, W};
  QUILL_RETURN_IF_ERROR(engine_->model().validate(bucket));
  return engine_->forward(bucket, pixels, pooled, last_hidden);
}

Status Dinov2Model::forward(const Bucket& bk, const float* pixels, float* pooled, float* last_hidden, Buffers& w,
                            Dispatcher& ops) const {
  const auto& c = cfg_;
  const int64_t B = bk.batch, C = c.num_channels, H = bk.height, W = bk.width;
  const int64_t ph = c.patch_h, pw = c.patch_w, gh = H / ph, gw = W / pw, N = gh * gw, S = 1 + N;
  const int64_t D = c.hidden_size, K = C * ph * pw;
  ops.set_scratch(w.scratch);
  QUILL_RETURN_IF_ERROR(position_table(H, W, gh, gw, w.pos, ops));

  // Dinov2PatchEmbeddings: conv with kernel = stride = patch as a linear over im2col rows
  // [b*N + gy*gw + gx][c*ph*pw + ky*pw + kx] (the conv weight's [D, C, ph, pw] order).
  for (int64_t b = 0; b < B; ++b)
    for (int64_t gy = 0; gy < gh; ++gy)
      for (int64_t gx = 0; gx < gw; ++gx) {
        float* row = w.patches + ((b * gh + gy) * gw + gx) * K;
        for (int64_t ch = 0; ch < C; ++ch)
          for (int64_t ky = 0; ky < ph; ++ky) {
            const float* src = pixels + ((b * C + ch) * H + gy * ph + ky) * W + gx * pw;
            std::memcpy(row + (ch * ph + ky) * pw, src, static_cast<size_t>(pw) * sizeof(float));
          }
      }
  QUILL_RETURN_IF_ERROR(ops.linear(w.patches, B * N, patch_proj.weight, patch_proj.bias_ptr(), w.tmp));

  // [CLS, patches] + position table.
  for (int64_t b = 0; b < B; ++b) {
    float* xb = w.x + b * S * D;
    std::memcpy(xb, cls_token.data(), static_cast<size_t>(D) * sizeof(float));
    std::memcpy(xb + D, w.tmp + b * N * D, static_cast<size_t>(N * D) * sizeof(float));
  }
  QUILL_RETURN_IF_ERROR(ops.add(w.x, w.pos, B * S, D, S));

  for (const auto& L : layers) QUILL_RETURN_IF_ERROR(run_layer(L, B, S, w, ops));

  float* out = last_hidden ? last_hidden : w.out;
  QUILL_RETURN_IF_ERROR(ops.layer_norm(w.x, out, B * S, D, static_cast<float>(c.layer_norm_eps), final_norm_w.data(),
                                       final_norm_b.data()));
  for (int64_t b = 0; b < B; ++b) std::memcpy(pooled + b * D, out + b * S * D, static_cast<size_t>(D) * sizeof(float));
  return Status();
}

namespace {

Status activate(Dinov2Act act, float* x, int64_t n, Dispatcher& ops) {
  switch (act) {
    case Dinov2Act::kGeluErf:
      return ops.gelu_erf(x, n);
    case Dinov2Act::kGeluTanh:
      return ops.gelu_tanh(x, n);
    case Dinov2Act::kSilu:
      return ops.silu(x, n);
    case Dinov2Act::kRelu:
      return ops.relu(x, n);
  }
  return internal_error("Dinov2: unknown activation");
}

}  // namespace

Status Dinov2Model::run_layer(const Dinov2Layer& L, int64_t B, int64_t S, const Buffers& w, Dispatcher& ops) const {
  const auto& c = cfg_;
  const int64_t D = c.hidden_size, F = c.mlp_hidden(), M = B * S;
  const auto eps = static_cast<float>(c.layer_norm_eps);
  const auto scale = static_cast<float>(std::pow(static_cast<double>(c.head_dim), -0.5));

  // x += lambda1 * o_proj(attention(norm1(x)))
  QUILL_RETURN_IF_ERROR(ops.layer_norm(w.x, w.h, M, D, eps, L.norm1_w.data(), L.norm1_b.data()));
  QUILL_RETURN_IF_ERROR(ops.linear(w.h, M, L.q.weight, L.q.bias_ptr(), w.q));  // [B, S, H, Dh]
  QUILL_RETURN_IF_ERROR(ops.linear(w.h, M, L.k.weight, L.k.bias_ptr(), w.k));
  QUILL_RETURN_IF_ERROR(ops.linear(w.h, M, L.v.weight, L.v.bias_ptr(), w.v));
  QUILL_RETURN_IF_ERROR(ops.attention(w.q, w.k, w.v, w.attn, B, S, S, c.num_attention_heads, c.head_dim, scale));
  QUILL_RETURN_IF_ERROR(ops.linear(w.attn, M, L.o.weight, L.o.bias_ptr(), w.tmp));
  QUILL_RETURN_IF_ERROR(ops.gated_residual(w.x, w.tmp, L.lambda1.data(), 1, M, D, 0));

  // x += lambda2 * mlp(norm2(x))
  QUILL_RETURN_IF_ERROR(ops.layer_norm(w.x, w.h, M, D, eps, L.norm2_w.data(), L.norm2_b.data()));
  const float* mlp_in = w.ff;
  if (!c.use_swiglu_ffn) {
    QUILL_RETURN_IF_ERROR(ops.linear(w.h, M, L.fc1.weight, L.fc1.bias_ptr(), w.ff));  // [M, F]
    QUILL_RETURN_IF_ERROR(activate(c.act, w.ff, M * F, ops));
  } else if (!L.up) {
    QUILL_RETURN_IF_ERROR(ops.linear(w.h, M, L.fc1.weight, L.fc1.bias_ptr(), w.ff));  // [M, 2F] gate | up
    QUILL_RETURN_IF_ERROR(ops.swiglu(w.ff, w.ff + F, 2 * F, w.ff_act, M, F));
    mlp_in = w.ff_act;
  } else {
    // gate_proj and up_proj: gate [M, F] then up [M, F].
    QUILL_RETURN_IF_ERROR(ops.linear(w.h, M, L.fc1.weight, L.fc1.bias_ptr(), w.ff));
    QUILL_RETURN_IF_ERROR(ops.linear(w.h, M, L.up->weight, L.up->bias_ptr(), w.ff + M * F));
    QUILL_RETURN_IF_ERROR(ops.swiglu(w.ff, w.ff + M * F, F, w.ff_act, M, F));
    mlp_in = w.ff_act;
  }
  QUILL_RETURN_IF_ERROR(ops.linear(mlp_in, M, L.fc2.weight, L.fc2.bias_ptr(), w.tmp));
  return ops.gated_residual(w.x, w.tmp, L.lambda2.data(), 1, M, D, 0);
}

}  // namespace quill
