// Quill's handwriting line model (tools/line_model.py is the PyTorch reference it is tested
// against): SD3 joint blocks in glyph-line mode. Image tokens are p x p patches of the line
// (pixels or latents); content tokens are one per patch column of the glyph line; 2D RoPE on q/k
// (rows on the first half of each head, columns on the second; content token j takes column j,
// row 0); pooled vector = timestep embedding + projected style embedding.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "io/model_files.h"
#include "models/joint_block.h"
#include "models/time_text_embed.h"
#include "models/weights.h"
#include "runtime/dispatcher.h"

namespace quill {

struct LineModelConfig {
  int64_t line_height = 32, max_line_width = 1024;
  int64_t in_channels = 1, out_channels = 1, downscale = 1, glyph_channels = 1, patch_size = 4;
  int64_t num_layers = 4, num_attention_heads = 4, attention_head_dim = 32, style_dim = 64;
  double rope_theta = 10000.0;
  bool qk_rms_norm = true;
  bool glyph_concat = false;  // x_embedder also sees the glyph line as extra channels

  int64_t x_embed_channels() const { return in_channels + (glyph_concat ? glyph_channels : 0); }

  int64_t inner_dim() const { return num_attention_heads * attention_head_dim; }
  int64_t latent_height() const { return line_height / downscale; }
  static Result<LineModelConfig> from_json(const nlohmann::json& j, const std::string& source);
};

// A plan bucket: the batch and the line's latent width (the height is fixed by the model).
struct LineBucket {
  int64_t batch = 1, latent_w = 0;
  bool operator==(const LineBucket& o) const = default;
  bool operator<(const LineBucket& o) const { return batch != o.batch ? batch < o.batch : latent_w < o.latent_w; }
  std::string to_string() const;
};

struct LineBuffers {
  JointBuffers joint{};
  float *temb = nullptr, *tproj = nullptr, *pooled_h = nullptr;
  float *patches = nullptr, *columns = nullptr, *out = nullptr;
  float *rope_cos = nullptr, *rope_sin = nullptr;  // [S, head_dim/2], filled when the plan is built
  OpScratch scratch;
  // Ragged batches (forward with row_tokens): the token order per row and its real-token count.
  int32_t *perm = nullptr, *valid = nullptr;
};

class LineModel {
 public:
  using Bucket = LineBucket;
  using Buffers = LineBuffers;

  static Result<std::unique_ptr<LineModel>> load(std::shared_ptr<ModelFiles> files);
  const LineModelConfig& config() const { return cfg_; }

  Status validate(const LineBucket& b) const;
  size_t layout(const LineBucket& b, const ThreadPool& pool, class Arena* arena, LineBuffers* bufs) const;
  // A plan laid out for `plan` serves `b` when the width matches and the batch is no larger: every
  // buffer is carved in the same order and sized in proportion to the batch (or not at all).
  static bool runs_in(const LineBucket& plan, const LineBucket& b) {
    return plan.latent_w == b.latent_w && plan.batch >= b.batch;
  }

  // sample [B, Cout, Hl, Wl] = model(hidden_states [B, C, Hl, Wl], glyphs [B, G, Hl, Wl],
  // style [B, style_dim], timestep [B]).
  Status forward(const LineBucket& b, const float* hidden_states, const float* glyphs, const float* style,
                 const float* timestep, float* sample, LineBuffers& bufs, Dispatcher& ops) const;
  // A ragged batch: row r holds row_tokens[r] patch columns of real content (<= latent_w / patch),
  // padded to the bucket's width; its real pixels come out as they would from a batch of rows
  // that width (attention never sees the padding), the padding's output is unspecified.
  // row_tokens null: every row is full width.
  Status forward(const LineBucket& b, const float* hidden_states, const float* glyphs, const float* style,
                 const float* timestep, float* sample, const int32_t* row_tokens, LineBuffers& bufs,
                 Dispatcher& ops) const;

 private:
  std::shared_ptr<ModelFiles> files_;
  LineModelConfig cfg_;
  Linear x_embedder, content_embedder;
  TimeTextEmbed time_text_embed;  // pooled = the style embedding
  Linear norm_out, proj_out;
  std::vector<JointBlock> blocks;
};

// cos/sin tables [(h_tok * w_tok + w_tok), head_dim / 2] as tools/line_model.py rope_tables().
void line_rope_tables(int64_t h_tok, int64_t w_tok, int64_t head_dim, double theta, float* cos, float* sin);

}  // namespace quill
