#include "models/qwen3_weight_names.h"

#include <array>
#include <cmath>

#include "io/json_util.h"
#include "models/qwen3_encoder.h"

namespace quill {

Qwen3WeightNames::Qwen3WeightNames(const ModelFiles& files) {
  llama_cpp_ = files.has("token_embd.weight");
  prefix_ = !llama_cpp_ && files.has("model.embed_tokens.weight") ? "model." : "";
}

std::string Qwen3WeightNames::module(const std::string& name) const {
  if (!llama_cpp_) return prefix_ + name;
  if (name == "embed_tokens") return "token_embd";
  if (name == "norm") return "output_norm";
  // layers.N.<rest>
  static constexpr std::array<std::pair<const char*, const char*>, 11> kLayer = {{
      {"self_attn.q_proj", "attn_q"},
      {"self_attn.k_proj", "attn_k"},
      {"self_attn.v_proj", "attn_v"},
      {"self_attn.o_proj", "attn_output"},
      {"self_attn.q_norm", "attn_q_norm"},
      {"self_attn.k_norm", "attn_k_norm"},
      {"input_layernorm", "attn_norm"},
      {"post_attention_layernorm", "ffn_norm"},
      {"mlp.gate_proj", "ffn_gate"},
      {"mlp.up_proj", "ffn_up"},
      {"mlp.down_proj", "ffn_down"},
  }};
  const std::string layers = "layers.";
  if (name.rfind(layers, 0) == 0) {
    const size_t dot = name.find('.', layers.size());
    if (dot != std::string::npos) {
      const std::string index = name.substr(layers.size(), dot - layers.size()), rest = name.substr(dot + 1);
      for (const auto& [hf, gg] : kLayer)
        if (rest == hf) return "blk." + index + "." + gg;
    }
  }
  return name;  // no llama.cpp spelling: looked up as is, so the error names it
}

Result<Qwen3Config> qwen3_config_from_gguf_metadata(const nlohmann::json& meta, int64_t vocab_rows,
                                                   const std::string& source) {
  auto arch = meta.find("general.architecture");
  if (arch == meta.end() || !arch->is_string())
    return invalid_file("the GGUF has no general.architecture (expected \"qwen3\")").with_file(source);
  if (*arch != "qwen3")
    return unsupported("text encoder architecture ", dump_json(*arch), " (expected \"qwen3\")").with_file(source);
  auto key_int = [&](const std::string& key, int64_t& field, int64_t lo, int64_t hi, bool required) -> Status {
    auto it = meta.find("qwen3." + key);
    if (it == meta.end()) {
      if (required) return invalid_file("GGUF metadata qwen3.", key, " is missing").with_file(source);
      return Status::ok();
    }
    if (!it->is_number_integer())
      return invalid_file("GGUF metadata qwen3.", key, " must be an integer, got ", dump_json(*it)).with_file(source);
    field = it->get<int64_t>();
    if (field < lo || field > hi)
      return invalid_file("GGUF metadata qwen3.", key, " = ", field, " is out of range [", lo, ", ", hi, "]")
          .with_file(source);
    return Status::ok();
  };
  auto key_real = [&](const std::string& key, double& field, bool positive) -> Status {
    auto it = meta.find("qwen3." + key);
    if (it == meta.end()) return Status::ok();
    if (!it->is_number() || !std::isfinite(it->get<double>()) ||
        (positive ? !(it->get<double>() > 0) : !(it->get<double>() >= 0 && it->get<double>() < 1)))
      return invalid_file("GGUF metadata qwen3.", key, " = ", dump_json(*it), " is not a valid value")
          .with_file(source);
    field = it->get<double>();
    return Status::ok();
  };
  Qwen3Config c;
  c.vocab_size = vocab_rows;
  QUILL_RETURN_IF_ERROR(key_int("embedding_length", c.hidden_size, 1, 1 << 16, true));
  QUILL_RETURN_IF_ERROR(key_int("feed_forward_length", c.intermediate_size, 1, 1 << 18, true));
  QUILL_RETURN_IF_ERROR(key_int("block_count", c.num_hidden_layers, 1, 1024, true));
  QUILL_RETURN_IF_ERROR(key_int("attention.head_count", c.num_attention_heads, 1, 1024, true));
  c.num_key_value_heads = c.num_attention_heads;
  QUILL_RETURN_IF_ERROR(key_int("attention.head_count_kv", c.num_key_value_heads, 1, 1024, false));
  c.head_dim = c.hidden_size / c.num_attention_heads;
  QUILL_RETURN_IF_ERROR(key_int("attention.key_length", c.head_dim, 2, 4096, false));
  int64_t value_length = c.head_dim;
  QUILL_RETURN_IF_ERROR(key_int("attention.value_length", value_length, 2, 4096, false));
  if (value_length != c.head_dim)
    return unsupported("attention.key_length ", c.head_dim, " != attention.value_length ", value_length)
        .with_file(source);
  if (c.head_dim % 2) return invalid_file("head dim ", c.head_dim, " must be even for RoPE").with_file(source);
  if (c.num_attention_heads % c.num_key_value_heads)
    return invalid_file("attention.head_count ", c.num_attention_heads, " is not a multiple of head_count_kv ",
                        c.num_key_value_heads)
        .with_file(source);
  QUILL_RETURN_IF_ERROR(key_real("attention.layer_norm_rms_epsilon", c.rms_norm_eps, false));
  QUILL_RETURN_IF_ERROR(key_real("rope.freq_base", c.rope_theta, true));
  if (auto it = meta.find("qwen3.rope.scaling.type"); it != meta.end() && !(it->is_string() && *it == "none"))
    return unsupported("RoPE scaling ", dump_json(*it)).with_file(source);
  if (auto it = meta.find("qwen3.vocab_size"); it != meta.end() && it->is_number_integer() &&
                                                it->get<int64_t>() != vocab_rows)
    return invalid_file("GGUF metadata qwen3.vocab_size ", it->get<int64_t>(), " but token_embd has ", vocab_rows,
                        " rows")
        .with_file(source);
  return c;
}

}  // namespace quill
