// The style-reference image encoder: transformers' Dinov2Model (models/dinov2/modeling_dinov2.py,
// transformers 5.23) on Quill's op layer. A pre-norm ViT: patch conv + CLS token + position table
// (bicubically resized when the patch grid differs from the config's), layers of
//   x += lambda1 * o_proj(attn(norm1(x)));  x += lambda2 * mlp(norm2(x))
// with mlp = fc2(act(fc1)) or SwiGLU, then a final LayerNorm; the pooled output is the normed CLS
// token. Weight names are those save_pretrained writes (attention.attention.query,
// attention.output.dense, mlp.weights_in / weights_out for SwiGLU); the in-memory names of
// transformers 5 (attention.q_proj, ..., mlp.gate_proj / up_proj / down_proj) are read too.
// Shapes: B batch, D hidden, S = 1 + N tokens, N = (H/ph)(W/pw) patches, F MLP hidden.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/arena.h"
#include "core/thread_pool.h"
#include "io/model_files.h"
#include "models/weights.h"
#include "runtime/engine.h"

namespace quill {

enum class Dinov2Act { kGeluErf, kGeluTanh, kSilu, kRelu };

struct Dinov2Config {
  // Defaults are transformers' Dinov2Config defaults, used for keys config.json leaves out.
  int64_t hidden_size = 768, num_hidden_layers = 12, num_attention_heads = 12, head_dim = 64;
  int64_t num_channels = 3, patch_h = 14, patch_w = 14, image_h = 224, image_w = 224;
  double mlp_ratio = 4.0, layer_norm_eps = 1e-6;
  bool qkv_bias = true, use_swiglu_ffn = false;
  std::string hidden_act = "gelu";
  Dinov2Act act = Dinov2Act::kGeluErf;  // from hidden_act (SwiGLU always uses SiLU)

  int64_t inner_dim() const { return num_attention_heads * head_dim; }
  int64_t grid_h() const { return image_h / patch_h; }
  int64_t grid_w() const { return image_w / patch_w; }
  // Dinov2MLP: int(D * mlp_ratio); Dinov2SwiGLUFFN: two thirds of that rounded up to 8.
  int64_t mlp_hidden() const;
  static Result<Dinov2Config> from_json(const nlohmann::json& j, const std::string& source);
};

struct Dinov2Layer {
  std::vector<float> norm1_w, norm1_b, norm2_w, norm2_b;  // [D]
  std::vector<float> lambda1, lambda2;                    // layer_scale{1,2}.lambda1 [D]
  Linear q, k, v, o;                                      // [inner, D] x3, [D, inner]
  // MLP: fc1 [F, D], fc2 [D, F]. SwiGLU: fc1 is gate||up fused [2F, D] (weights_in) or the gate
  // alone [F, D] with `up` beside it (gate_proj / up_proj); fc2 is weights_out / down_proj.
  Linear fc1, fc2;
  std::optional<Linear> up;
};

// One plan's shape: batch and image size in pixels.
struct Dinov2Bucket {
  int64_t batch = 1, height = 0, width = 0;
  auto operator<=>(const Dinov2Bucket&) const = default;
  std::string to_string() const;
};

// Activation buffers of one forward, carved from a plan's arena.
struct Dinov2Buffers {
  float* patches = nullptr;                                         // [B*N, C*ph*pw]
  float* pos = nullptr;                                             // [S, D]
  float* x = nullptr;                                               // [B*S, D] residual stream
  float* h = nullptr;                                               // [B*S, D] normed
  float *q = nullptr, *k = nullptr, *v = nullptr, *attn = nullptr;  // [B*S, inner]
  float* tmp = nullptr;                                             // [B*S, D] branch output (patch embeddings first)
  float* ff = nullptr;                                              // [B*S, F] (SwiGLU: [B*S, 2F], gate then up)
  float* ff_act = nullptr;                                          // [B*S, F] SwiGLU product
  float* out = nullptr;  // [B*S, D] final norm when the caller wants no last_hidden
  OpScratch scratch;
};

// The weights and the forward (an Engine model: runtime/engine.h).
class Dinov2Model {
 public:
  using Bucket = Dinov2Bucket;
  using Buffers = Dinov2Buffers;
  static Result<std::unique_ptr<Dinov2Model>> load(std::shared_ptr<ModelFiles> files);

  const Dinov2Config& config() const { return cfg_; }
  // Batch >= 1 and an image of at least one patch.
  Status validate(const Bucket& b) const;
  size_t layout(const Bucket& b, const ThreadPool& pool, Arena* arena, Buffers* bufs) const;
  // pixels [B, C, H, W] (f32, normalised) -> pooled [B, D] and, when not null, last_hidden [B, S, D].
  Status forward(const Bucket& b, const float* pixels, float* pooled, float* last_hidden, Buffers& w,
                 Dispatcher& ops) const;

 private:
  // pos [S, D]: the position table as is, or its patch part resized to gh x gw.
  Status position_table(int64_t H, int64_t W, int64_t gh, int64_t gw, float* pos, Dispatcher& ops) const;
  Status run_layer(const Dinov2Layer& L, int64_t B, int64_t S, const Buffers& w, Dispatcher& ops) const;

  std::shared_ptr<ModelFiles> files_;
  Dinov2Config cfg_;
  Linear patch_proj;                       // embeddings.patch_embeddings.projection as [D, C*ph*pw]
  std::vector<float> cls_token;            // [D]
  std::vector<float> position_embeddings;  // [1 + P, D], P = num_positions
  int64_t num_positions = 0;
  std::vector<Dinov2Layer> layers;
  std::vector<float> final_norm_w, final_norm_b;  // layernorm [D]
};

// The encoder as callers use it: the model behind an Engine (one plan per batch x image size).
// Not thread-safe: one encode at a time.
class Dinov2Encoder {
 public:
  // `pool` must outlive the encoder.
  static Result<std::unique_ptr<Dinov2Encoder>> load(std::shared_ptr<ModelFiles> files,
                                                     ThreadPool& pool = ThreadPool::global());

  const Dinov2Config& config() const { return engine_->model().config(); }
  int64_t hidden_size() const { return config().hidden_size; }
  // Tokens of an H x W image: 1 + (H / patch_h) * (W / patch_w).
  int64_t sequence_length(int64_t H, int64_t W) const;
  Engine<Dinov2Model>& engine() { return *engine_; }

  // pixels [B, C, H, W] (f32, already normalised) -> pooled [B, D] (= layernorm'ed CLS token,
  // transformers' pooler_output) and, when not null, last_hidden [B, S, D] (last_hidden_state).
  // Pixels past the last whole patch are ignored, as the stride-p conv does.
  Status encode(const float* pixels, int64_t B, int64_t C, int64_t H, int64_t W, float* pooled,
                float* last_hidden = nullptr);
  // As above from a contiguous f32 tensor [B, C, H, W].
  Status encode(const Tensor& pixels, float* pooled, float* last_hidden = nullptr);

 private:
  explicit Dinov2Encoder(std::unique_ptr<Engine<Dinov2Model>> engine) : engine_(std::move(engine)) {}
  std::unique_ptr<Engine<Dinov2Model>> engine_;
};

}  // namespace quill
