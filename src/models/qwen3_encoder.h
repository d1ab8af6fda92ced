// transformers' Qwen3Model (models/qwen3/modeling_qwen3.py) as a text encoder on Quill's ops: token
// embeddings, decoder layers (RMSNorm, grouped-query attention with per-head q/k RMSNorm and
// rotate-half RoPE, causal with right padding, SwiGLU MLP), returning the hidden states of chosen
// layers (index 0 = the embedding output, i = after layer i), as FLUX.2 [klein] conditions on
// hidden_states[9], [18], [27]. Layers past the last one asked for are not run; no KV cache.
// Weights: transformers folders / safetensors / Quill GGUF, or llama.cpp GGUF (names and config
// mapped in models/qwen3_weight_names.h).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "io/model_files.h"
#include "models/weights.h"
#include "runtime/dispatcher.h"

namespace quill {

struct Qwen3Config {
  int64_t vocab_size = 151936, hidden_size = 4096, intermediate_size = 22016, num_hidden_layers = 32;
  int64_t num_attention_heads = 32, num_key_value_heads = 32, head_dim = 128;
  double rms_norm_eps = 1e-6, rope_theta = 10000.0;
  bool attention_bias = false;
  static Result<Qwen3Config> from_json(const nlohmann::json& j, const std::string& source);
};

struct Qwen3Bucket {
  int64_t batch = 1, seq_len = 0;
  bool operator==(const Qwen3Bucket& o) const = default;
  bool operator<(const Qwen3Bucket& o) const;
  std::string to_string() const;
};

struct Qwen3Buffers {
  float *h = nullptr, *n = nullptr, *tmp = nullptr;        // [B*S, D]
  float *q = nullptr, *k = nullptr, *v = nullptr;          // [B*S, H*Dh], [B*S, Hkv*Dh] x2
  float *attn = nullptr;                                   // [B*S, H*Dh]
  float *gate = nullptr, *up = nullptr, *mlp = nullptr;    // [B*S, F]
  float *cos = nullptr, *sin = nullptr;                    // [S, Dh/2]
  float* attn_scratch = nullptr;                           // masked attention rows
  OpScratch scratch;
};

class Qwen3Encoder {
 public:
  using Bucket = Qwen3Bucket;
  using Buffers = Qwen3Buffers;
  // `layers_needed`: run this many decoder layers (<= num_hidden_layers); 0 = all.
  static Result<std::unique_ptr<Qwen3Encoder>> load(std::shared_ptr<ModelFiles> files, int64_t layers_needed = 0);

  const Qwen3Config& config() const { return cfg_; }
  int64_t layers_run() const { return int64_t(layers_.size()); }
  Status validate(const Qwen3Bucket& b) const;
  size_t layout(const Qwen3Bucket& b, const ThreadPool& pool, class Arena* arena, Qwen3Buffers* bufs) const;

  // ids [B, S], valid[b] = the number of real (unpadded) tokens at the start of row b. Writes the
  // hidden states of `layers` (each in [0, layers_run()]) side by side: out [B, S, layers.size() * D],
  // as torch.stack(..., dim=1).permute(0, 2, 1, 3).reshape(B, S, -1) lays them out.
  Status forward(const Qwen3Bucket& b, const int32_t* ids, const int32_t* valid, const std::vector<int64_t>& layers,
                 float* out, Qwen3Buffers& bufs, Dispatcher& ops) const;

 private:
  struct Layer {
    Linear q_proj, k_proj, v_proj, o_proj, gate_proj, up_proj, down_proj;
    std::vector<float> q_norm, k_norm, input_layernorm, post_attention_layernorm;
  };
  std::shared_ptr<ModelFiles> files_;
  Qwen3Config cfg_;
  Tensor embed_tokens;  // [vocab, D], any float dtype, rows gathered per token
  std::vector<Layer> layers_;
};

}  // namespace quill
