// Qwen3 text-encoder weights under either naming, mapped in this one place:
//   transformers  `embed_tokens`, `layers.N.self_attn.q_proj`, ... (with or without `model.`,
//                 as Qwen3ForCausalLM / Qwen3Model save them; also Quill GGUFs made from them);
//   llama.cpp     `token_embd`, `blk.N.attn_q`, `attn_q_norm`, `attn_norm`, `ffn_norm`,
//                 `ffn_gate/up/down`, `attn_output`, `output_norm` (convert_hf_to_gguf.py; Qwen3
//                 uses NeoX RoPE there, so q/k rows are stored unpermuted).
// A llama.cpp GGUF carries no config.json: its `qwen3.*` metadata is read into the same config.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "io/model_files.h"

namespace quill {

struct Qwen3Config;

class Qwen3WeightNames {
 public:
  explicit Qwen3WeightNames(const ModelFiles& files);  // detects the naming from the tensors present
  bool llama_cpp() const { return llama_cpp_; }
  // The file's name for a transformers module name relative to the base model ("embed_tokens",
  // "layers.3.self_attn.q_proj", "layers.3.input_layernorm", "norm"); add ".weight" / ".bias".
  std::string module(const std::string& transformers_name) const;

 private:
  bool llama_cpp_ = false;
  std::string prefix_;  // "model." or ""
};

// The Qwen3Config a llama.cpp GGUF's metadata describes (`general.architecture` must be "qwen3");
// `vocab_rows` = token_embd's rows (the metadata's vocab_size is optional).
Result<Qwen3Config> qwen3_config_from_gguf_metadata(const nlohmann::json& meta, int64_t vocab_rows,
                                                   const std::string& source);

}  // namespace quill
