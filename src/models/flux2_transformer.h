// Flux2Transformer2DModel (diffusers, models/transformers/transformer_flux2.py) on Quill's ops:
// the FLUX.2 [dev] / [klein] transformer. Weight names and the order of operations follow the
// diffusers module. Inputs are the packed latent tokens [B, N, C] (N may include reference-image
// tokens, edit mode), text states [B, T, J], timesteps as sigmas in [0, 1] (x1000 inside, as
// diffusers does), an optional guidance scale, and 4-axis position ids for both sequences.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "io/model_files.h"
#include "models/flux2_blocks.h"
#include "models/weights.h"
#include "runtime/dispatcher.h"

namespace quill {

struct Flux2Config {
  // Defaults are diffusers' (FLUX.2 [dev]); klein-4B: 5 / 20 layers, 24 heads, joint dim 7680.
  int64_t patch_size = 1, in_channels = 128, out_channels = 128, num_layers = 8, num_single_layers = 48;
  int64_t attention_head_dim = 128, num_attention_heads = 48, joint_attention_dim = 15360;
  int64_t timestep_guidance_channels = 256;
  double mlp_ratio = 3.0, rope_theta = 2000.0;
  std::vector<int64_t> axes_dims_rope = {32, 32, 32, 32};
  float eps = 1e-6f;
  bool guidance_embeds = true;

  int64_t inner_dim() const { return num_attention_heads * attention_head_dim; }
  int64_t mlp_hidden() const;  // int(inner_dim * mlp_ratio), as Python truncates
  int64_t id_axes() const { return int64_t(axes_dims_rope.size()); }
  static Result<Flux2Config> from_json(const nlohmann::json& j, const std::string& source);
};

// The shape a plan is built for: batch, image tokens (latent tokens plus any reference tokens) and
// text tokens.
struct Flux2Bucket {
  int64_t batch = 1, image_tokens = 0, text_len = 0;
  bool operator==(const Flux2Bucket& o) const = default;
  bool operator<(const Flux2Bucket& o) const;
  std::string to_string() const;
};

struct Flux2Buffers {
  float *tproj = nullptr, *gproj = nullptr;                  // [B, timestep_guidance_channels]
  float *temb = nullptr, *temb_act = nullptr, *tmp = nullptr;  // [B, D]
  float *mod_img = nullptr, *mod_txt = nullptr;              // [B, 6D]
  float *mod_single = nullptr, *mod_out = nullptr;           // [B, 3D], [B, 2D]
  float *rope_cos = nullptr, *rope_sin = nullptr;            // [S, head_dim / 2]
  Flux2BlockBuffers blocks{};
  OpScratch scratch;
};

// The inputs of one forward (row-major f32).
struct Flux2Inputs {
  const float* hidden_states = nullptr;          // [B, N, in_channels]
  const float* encoder_hidden_states = nullptr;  // [B, T, joint_attention_dim]
  const float* timestep = nullptr;               // [B] sigmas
  const float* guidance = nullptr;               // [B]; required iff the config has guidance_embeds
  const float* img_ids = nullptr;                // [N, id_axes]
  const float* txt_ids = nullptr;                // [T, id_axes]
};

class Flux2Transformer {
 public:
  using Bucket = Flux2Bucket;
  using Buffers = Flux2Buffers;
  static Result<std::unique_ptr<Flux2Transformer>> load(std::shared_ptr<ModelFiles> files);

  const Flux2Config& config() const { return cfg_; }
  const ModelFiles& files() const { return *files_; }
  Status validate(const Flux2Bucket& b) const;
  size_t layout(const Flux2Bucket& b, const ThreadPool& pool, class Arena* arena, Flux2Buffers* bufs) const;

  // sample [B, N, out_channels]. No allocation: all memory is in `bufs`.
  Status forward(const Flux2Bucket& b, const Flux2Inputs& in, float* sample, Flux2Buffers& bufs,
                 Dispatcher& ops) const;

 private:
  Status time_guidance_embed(const Flux2Bucket& b, const Flux2Inputs& in, Flux2Buffers& w, Dispatcher& ops) const;

  std::shared_ptr<ModelFiles> files_;
  Flux2Config cfg_;
  Linear timestep_linear_1, timestep_linear_2;  // time_guidance_embed.timestep_embedder.linear_{1,2}
  Linear guidance_linear_1, guidance_linear_2;  // time_guidance_embed.guidance_embedder (guidance_embeds)
  Linear double_stream_modulation_img, double_stream_modulation_txt, single_stream_modulation;  // .linear
  Linear x_embedder, context_embedder, norm_out, proj_out;  // norm_out.linear
  bool norm_out_shift_first_ = false;                        // BFL checkpoints store (shift, scale)
  std::vector<Flux2DoubleBlock> transformer_blocks;
  std::vector<Flux2SingleBlock> single_transformer_blocks;
};

// Flux2PosEmbed: for each token's ids and each axis a (axes_dim[a] / 2 pairs), angle =
// id[a] * theta^(-2j / axes_dim[a]) in double, stored as f32 cos/sin [tokens, sum(axes) / 2].
void flux2_rope_table(const float* ids, int64_t tokens, const std::vector<int64_t>& axes_dims, double theta,
                      float* cos, float* sin);

}  // namespace quill
