#include "models/qwen3_encoder.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "core/arena.h"
#include "io/json_util.h"
#include "models/qwen3_weight_names.h"

namespace quill {

Result<Qwen3Config> Qwen3Config::from_json(const nlohmann::json& j, const std::string& source) {
  if (!j.is_object()) return invalid_file("config is not a JSON object").with_file(source);
  Qwen3Config c;
  auto get_int = [&](const char* key, int64_t& field, int64_t lo, int64_t hi, bool required) -> Status {
    auto it = j.find(key);
    if (it == j.end() || it->is_null()) {
      if (required) return invalid_file("config '", key, "' is missing").with_file(source);
      return Status::ok();
    }
    if (!it->is_number_integer()) return invalid_file("config '", key, "' must be an integer").with_file(source);
    field = it->get<int64_t>();
    if (field < lo || field > hi)
      return invalid_file("config '", key, "' = ", field, " is out of range [", lo, ", ", hi, "]").with_file(source);
    return Status::ok();
  };
  QUILL_RETURN_IF_ERROR(get_int("vocab_size", c.vocab_size, 1, 1 << 24, true));
  QUILL_RETURN_IF_ERROR(get_int("hidden_size", c.hidden_size, 1, 1 << 16, true));
  QUILL_RETURN_IF_ERROR(get_int("intermediate_size", c.intermediate_size, 1, 1 << 18, true));
  QUILL_RETURN_IF_ERROR(get_int("num_hidden_layers", c.num_hidden_layers, 1, 1024, true));
  QUILL_RETURN_IF_ERROR(get_int("num_attention_heads", c.num_attention_heads, 1, 1024, true));
  c.num_key_value_heads = c.num_attention_heads;
  QUILL_RETURN_IF_ERROR(get_int("num_key_value_heads", c.num_key_value_heads, 1, 1024, false));
  c.head_dim = c.hidden_size / c.num_attention_heads;  // transformers: getattr(config, "head_dim", D / heads)
  QUILL_RETURN_IF_ERROR(get_int("head_dim", c.head_dim, 2, 4096, false));
  if (c.head_dim % 2) return invalid_file("config 'head_dim' ", c.head_dim, " must be even for RoPE").with_file(source);
  if (c.num_attention_heads % c.num_key_value_heads)
    return invalid_file("config: num_attention_heads ", c.num_attention_heads, " is not a multiple of ",
                        "num_key_value_heads ", c.num_key_value_heads)
        .with_file(source);
  if (auto it = j.find("rms_norm_eps"); it != j.end() && !it->is_null()) {
    if (!it->is_number() || !(it->get<double>() >= 0) || !(it->get<double>() < 1))
      return invalid_file("config 'rms_norm_eps' must be a number in [0, 1)").with_file(source);
    c.rms_norm_eps = it->get<double>();
  }
  // transformers 5 keeps rope_theta in rope_parameters; older configs at the top level.
  const nlohmann::json* theta = nullptr;
  if (auto rp = j.find("rope_parameters"); rp != j.end() && rp->is_object()) {
    if (auto t = rp->find("rope_type"); t != rp->end() && !(t->is_string() && t->get<std::string>() == "default"))
      return unsupported("RoPE type ", dump_json(*t), " (only \"default\")").with_file(source);
    if (auto t = rp->find("rope_theta"); t != rp->end()) theta = &*t;
  }
  if (auto t = j.find("rope_theta"); !theta && t != j.end()) theta = &*t;
  if (auto rs = j.find("rope_scaling"); rs != j.end() && !rs->is_null())
    return unsupported("rope_scaling ", dump_json(*rs)).with_file(source);
  if (theta) {
    if (!theta->is_number() || !(theta->get<double>() > 0) || !std::isfinite(theta->get<double>()))
      return invalid_file("config rope_theta must be a finite number > 0, got ", dump_json(*theta)).with_file(source);
    c.rope_theta = theta->get<double>();
  }
  if (auto it = j.find("attention_bias"); it != j.end() && it->is_boolean()) c.attention_bias = it->get<bool>();
  if (auto it = j.find("layer_types"); it != j.end() && it->is_array())
    for (const auto& t : *it)
      if (!(t.is_string() && t.get<std::string>() == "full_attention"))
        return unsupported("layer type ", dump_json(t), " (sliding-window attention is not implemented)")
            .with_file(source);
  if (auto it = j.find("hidden_act"); it != j.end() && !(it->is_string() && it->get<std::string>() == "silu"))
    return unsupported("hidden_act ", dump_json(*it), " (Qwen3 uses silu)").with_file(source);
  return c;
}

bool Qwen3Bucket::operator<(const Qwen3Bucket& o) const {
  return batch != o.batch ? batch < o.batch : seq_len < o.seq_len;
}
std::string Qwen3Bucket::to_string() const { return str_cat("batch ", batch, ", tokens ", seq_len); }

Result<std::unique_ptr<Qwen3Encoder>> Qwen3Encoder::load(std::shared_ptr<ModelFiles> files, int64_t layers_needed) {
  std::unique_ptr<Qwen3Encoder> m(new Qwen3Encoder());
  m->files_ = files;
  const Qwen3WeightNames names(*files);
  if (names.llama_cpp()) {
    // llama.cpp GGUF: the config is in its qwen3.* metadata, the vocabulary size in token_embd.
    QUILL_ASSIGN_OR_RETURN(Tensor embd, files->get("token_embd.weight"));
    if (embd.shape().rank() != 2)
      return invalid_file("token_embd.weight has shape ", embd.shape().to_string(), " (expected 2-D)")
          .with_file(files->path());
    QUILL_ASSIGN_OR_RETURN(m->cfg_, qwen3_config_from_gguf_metadata(files->config(), embd.shape()[0], files->path()));
  } else {
    if (!files->has_config()) return not_found("the Qwen3 text encoder has no config.json").with_file(files->path());
    QUILL_ASSIGN_OR_RETURN(m->cfg_, Qwen3Config::from_json(files->config(), files->config_path()));
  }
  const Qwen3Config& c = m->cfg_;
  if (layers_needed < 0 || layers_needed > c.num_hidden_layers)
    return invalid_argument("asked for ", layers_needed, " layers of a ", c.num_hidden_layers, "-layer encoder");
  const int64_t L = layers_needed ? layers_needed : c.num_hidden_layers;
  QUILL_ASSIGN_OR_RETURN(m->embed_tokens,
                         files->get(names.module("embed_tokens") + ".weight", Shape{c.vocab_size, c.hidden_size}));
  if (!dtype_traits(m->embed_tokens.dtype()).is_float)
    return unsupported("embed_tokens in ", dtype_name(m->embed_tokens.dtype()), " (float types only)")
        .with_file(files->path());
  const int64_t D = c.hidden_size, Dh = c.head_dim, H = c.num_attention_heads, Hkv = c.num_key_value_heads,
                F = c.intermediate_size;
  const bool bias = c.attention_bias;
  for (int64_t i = 0; i < L; ++i) {
    const std::string l = str_cat("layers.", i, ".");
    auto lin = [&](const char* name, int64_t in, int64_t out, bool b) {
      return load_linear(*files, names.module(l + name), in, out, b);
    };
    auto norm = [&](const char* name, int64_t dim) {
      return load_f32(*files, names.module(l + name) + ".weight", {dim});
    };
    Layer y;
    QUILL_ASSIGN_OR_RETURN(y.q_proj, lin("self_attn.q_proj", D, H * Dh, bias));
    QUILL_ASSIGN_OR_RETURN(y.k_proj, lin("self_attn.k_proj", D, Hkv * Dh, bias));
    QUILL_ASSIGN_OR_RETURN(y.v_proj, lin("self_attn.v_proj", D, Hkv * Dh, bias));
    QUILL_ASSIGN_OR_RETURN(y.o_proj, lin("self_attn.o_proj", H * Dh, D, bias));
    QUILL_ASSIGN_OR_RETURN(y.gate_proj, lin("mlp.gate_proj", D, F, false));
    QUILL_ASSIGN_OR_RETURN(y.up_proj, lin("mlp.up_proj", D, F, false));
    QUILL_ASSIGN_OR_RETURN(y.down_proj, lin("mlp.down_proj", F, D, false));
    QUILL_ASSIGN_OR_RETURN(y.q_norm, norm("self_attn.q_norm", Dh));
    QUILL_ASSIGN_OR_RETURN(y.k_norm, norm("self_attn.k_norm", Dh));
    QUILL_ASSIGN_OR_RETURN(y.input_layernorm, norm("input_layernorm", D));
    QUILL_ASSIGN_OR_RETURN(y.post_attention_layernorm, norm("post_attention_layernorm", D));
    m->layers_.push_back(std::move(y));
  }
  return m;
}

Status Qwen3Encoder::validate(const Qwen3Bucket& b) const {
  if (b.batch <= 0 || b.batch > 256) return invalid_argument("batch ", b.batch, " out of range [1, 256]");
  if (b.seq_len <= 0 || b.seq_len > 32768) return invalid_argument("sequence length ", b.seq_len, " out of range");
  return Status::ok();
}

size_t Qwen3Encoder::layout(const Qwen3Bucket& b, const ThreadPool& pool, Arena* arena, Qwen3Buffers* bufs) const {
  const Qwen3Config& c = cfg_;
  const int64_t M = b.batch * b.seq_len, D = c.hidden_size, F = c.intermediate_size;
  const int64_t qd = c.num_attention_heads * c.head_dim, kvd = c.num_key_value_heads * c.head_dim;
  ArenaSizer sizer;
  auto alloc = [&](float*& ptr, int64_t floats) {
    if (arena)
      ptr = arena->allocate_n<float>(size_t(floats));
    else
      sizer.add(size_t(floats) * sizeof(float));
  };
  Qwen3Buffers local;
  Qwen3Buffers& o = bufs ? *bufs : local;
  alloc(o.h, M * D);
  alloc(o.n, M * D);
  alloc(o.tmp, M * D);
  alloc(o.q, M * qd);
  alloc(o.k, M * kvd);
  alloc(o.v, M * kvd);
  alloc(o.attn, M * qd);
  alloc(o.gate, M * F);
  alloc(o.up, M * F);
  alloc(o.mlp, M * F);
  alloc(o.cos, b.seq_len * c.head_dim / 2);
  alloc(o.sin, b.seq_len * c.head_dim / 2);
  alloc(o.attn_scratch, int64_t(op_masked_attention_scratch_floats(b.seq_len, pool)));
  size_t lin = 0;
  for (const Layer& y : layers_)
    for (const Linear* l : {&y.q_proj, &y.k_proj, &y.v_proj, &y.o_proj, &y.gate_proj, &y.up_proj, &y.down_proj})
      lin = std::max(lin, op_linear_scratch_floats(l->weight, pool));
  o.scratch.linear_floats = lin;
  alloc(o.scratch.linear, int64_t(lin));
  return arena ? arena->used() : sizer.peak();
}

Status Qwen3Encoder::forward(const Qwen3Bucket& b, const int32_t* ids, const int32_t* valid,
                             const std::vector<int64_t>& layers, float* out, Qwen3Buffers& w, Dispatcher& ops) const {
  const Qwen3Config& c = cfg_;
  const int64_t B = b.batch, S = b.seq_len, M = B * S, D = c.hidden_size, H = c.num_attention_heads,
                Hkv = c.num_key_value_heads, Dh = c.head_dim, F = c.intermediate_size, half = Dh / 2;
  const float eps = float(c.rms_norm_eps);
  const int64_t n_out = int64_t(layers.size());
  for (int64_t l : layers)
    if (l < 0 || l > layers_run())
      return invalid_argument("hidden state ", l, " asked for; this encoder runs ", layers_run(), " layers");
  for (int64_t i = 0; i < M; ++i)
    if (ids[i] < 0 || ids[i] >= c.vocab_size)
      return invalid_argument("token id ", ids[i], " at position ", i, " is outside the vocabulary (", c.vocab_size,
                              ")");
  ops.set_scratch(w.scratch);

  // embed_tokens: gather rows (converted to f32 from the stored dtype).
  const int64_t row_bytes = *dtype_bytes_for(embed_tokens.dtype(), D);
  for (int64_t i = 0; i < M; ++i) {
    const uint8_t* src = static_cast<const uint8_t*>(embed_tokens.data()) + ids[i] * row_bytes;
    if (!convert_to_f32(embed_tokens.dtype(), src, w.h + i * D, D))
      return unsupported("embed_tokens dtype ", dtype_name(embed_tokens.dtype()));
  }
  auto emit = [&](int64_t index) {
    for (int64_t slot = 0; slot < n_out; ++slot)
      if (layers[size_t(slot)] == index)
        for (int64_t i = 0; i < M; ++i)
          std::memcpy(out + (i * n_out + slot) * D, w.h + i * D, size_t(D) * sizeof(float));
  };
  emit(0);

  // Qwen3RotaryEmbedding (default type) in f32, positions 0 .. S-1.
  for (int64_t s = 0; s < S; ++s)
    for (int64_t i = 0; i < half; ++i) {
      const float inv_freq = 1.0f / std::pow(float(c.rope_theta), float(2 * i) / float(Dh));
      const float angle = float(s) * inv_freq;
      w.cos[s * half + i] = std::cos(angle);
      w.sin[s * half + i] = std::sin(angle);
    }

  const float scale = 1.0f / std::sqrt(float(Dh));
  for (int64_t li = 0; li < layers_run(); ++li) {
    const Layer& y = layers_[size_t(li)];
    QUILL_RETURN_IF_ERROR(ops.rms_norm(w.h, w.n, M, D, eps, y.input_layernorm.data()));
    QUILL_RETURN_IF_ERROR(ops.linear(w.n, M, y.q_proj.weight, y.q_proj.bias_ptr(), w.q));
    QUILL_RETURN_IF_ERROR(ops.linear(w.n, M, y.k_proj.weight, y.k_proj.bias_ptr(), w.k));
    QUILL_RETURN_IF_ERROR(ops.linear(w.n, M, y.v_proj.weight, y.v_proj.bias_ptr(), w.v));
    QUILL_RETURN_IF_ERROR(ops.rms_norm(w.q, w.q, M * H, Dh, eps, y.q_norm.data()));
    QUILL_RETURN_IF_ERROR(ops.rms_norm(w.k, w.k, M * Hkv, Dh, eps, y.k_norm.data()));
    QUILL_RETURN_IF_ERROR(ops.rope_half(w.q, B, S, H, Dh, w.cos, w.sin));
    QUILL_RETURN_IF_ERROR(ops.rope_half(w.k, B, S, Hkv, Dh, w.cos, w.sin));
    QUILL_RETURN_IF_ERROR(
        ops.masked_attention(w.q, w.k, w.v, w.attn, B, S, H, Hkv, Dh, scale, valid, true, w.attn_scratch));
    QUILL_RETURN_IF_ERROR(ops.linear(w.attn, M, y.o_proj.weight, y.o_proj.bias_ptr(), w.tmp));
    QUILL_RETURN_IF_ERROR(ops.add(w.h, w.tmp, M, D, M));
    QUILL_RETURN_IF_ERROR(ops.rms_norm(w.h, w.n, M, D, eps, y.post_attention_layernorm.data()));
    QUILL_RETURN_IF_ERROR(ops.linear(w.n, M, y.gate_proj.weight, nullptr, w.gate));
    QUILL_RETURN_IF_ERROR(ops.linear(w.n, M, y.up_proj.weight, nullptr, w.up));
    QUILL_RETURN_IF_ERROR(ops.swiglu(w.gate, w.up, F, w.mlp, M, F));
    QUILL_RETURN_IF_ERROR(ops.linear(w.mlp, M, y.down_proj.weight, nullptr, w.tmp));
    QUILL_RETURN_IF_ERROR(ops.add(w.h, w.tmp, M, D, M));
    emit(li + 1);
  }
  return Status::ok();
}

}  // namespace quill
