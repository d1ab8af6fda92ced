// SD3Transformer2DModel (diffusers, models/transformers/transformer_sd3.py) on Quill's ops.
// Weight names and the order of operations follow the diffusers module so the two can be read
// side by side; shapes are in the comments. B batch, N image tokens (= (H/p)(W/p)), T text tokens,
// D inner dim (= heads x head_dim).
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "io/model_files.h"
#include "models/joint_block.h"
#include "models/time_text_embed.h"
#include "models/weights.h"
#include "runtime/dispatcher.h"

namespace quill {

struct SD3Config {
  int64_t sample_size = 128, patch_size = 2, in_channels = 16, num_layers = 18;
  int64_t attention_head_dim = 64, num_attention_heads = 18;
  int64_t joint_attention_dim = 4096, caption_projection_dim = 1152, pooled_projection_dim = 2048;
  int64_t out_channels = 16, pos_embed_max_size = 96;
  std::vector<int64_t> dual_attention_layers;
  bool qk_rms_norm = false;  // qk_norm == "rms_norm"

  int64_t inner_dim() const { return num_attention_heads * attention_head_dim; }
  static Result<SD3Config> from_json(const nlohmann::json& j, const std::string& source);
};

// The shape bucket a plan is built for.
struct SD3Bucket {
  int64_t batch = 1, latent_h = 0, latent_w = 0, text_len = 0;
  bool operator==(const SD3Bucket& o) const = default;
  bool operator<(const SD3Bucket& o) const;
  std::string to_string() const;
};

// Activation buffers of one forward, carved from a plan's arena.
struct SD3Buffers {
  float *x = nullptr, *c = nullptr;                                 // [B,N,D], [B,T,D] residual streams
  float *temb = nullptr, *temb_act = nullptr;                       // [B,D]
  float *tproj = nullptr, *pooled_h = nullptr;                      // [B,256], [B,D]
  float *mod_x = nullptr, *mod_c = nullptr;                         // [B,9D], [B,6D]
  float *nx = nullptr, *nx2 = nullptr, *nc = nullptr;               // normed streams
  float *q = nullptr, *k = nullptr, *v = nullptr, *attn = nullptr;  // [B,N+T,D]
  float *tmp_x = nullptr, *tmp_c = nullptr;                         // [B,N,D], [B,T,D]
  float* ff = nullptr;                                              // [B*max(N,T), 4D]
  float* patches = nullptr;                                         // [B*N, C*p*p]
  float* pos = nullptr;                                             // [N, D] the cropped pos_embed table
  float* out = nullptr;                                             // [B, N, p*p*Cout]
  OpScratch scratch;
};

class SD3Transformer {
 public:
  using Bucket = SD3Bucket;
  using Buffers = SD3Buffers;
  static Result<std::unique_ptr<SD3Transformer>> load(std::shared_ptr<ModelFiles> files);

  const SD3Config& config() const { return cfg_; }
  const ModelFiles& files() const { return *files_; }
  // Checks a bucket against the config (patch divisibility, pos_embed_max_size).
  Status validate(const SD3Bucket& b) const;

  // Lays out the buffers for `b`: with a null arena only sizes them (returns bytes needed);
  // with an arena, carves them and fills `bufs`.
  size_t layout(const SD3Bucket& b, const ThreadPool& pool, class Arena* arena, SD3Buffers* bufs) const;

  // sample[B, Cout, H, W] = model(hidden_states[B, C, H, W], encoder_hidden_states[B, T, J],
  // pooled_projections[B, P], timestep[B]). No allocation: all memory is in `bufs`.
  Status forward(const SD3Bucket& b, const float* hidden_states, const float* encoder_hidden_states,
                 const float* pooled_projections, const float* timestep, float* sample, SD3Buffers& bufs,
                 Dispatcher& ops) const;

 private:
  std::shared_ptr<ModelFiles> files_;
  SD3Config cfg_;
  Linear patch_proj;             // pos_embed.proj as [D, C*p*p]
  std::vector<float> pos_table;  // pos_embed.pos_embed [max*max, D]
  TimeTextEmbed time_text_embed;
  Linear context_embedder, norm_out, proj_out;
  std::vector<JointBlock> blocks;
};

}  // namespace quill
