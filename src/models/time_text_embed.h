// diffusers' CombinedTimestepTextProjEmbeddings (`time_text_embed.*`): the pooled conditioning
// vector of SD3-style DiTs. temb = TimestepEmbedding(sinusoid_256(t)) + PixArtAlphaTextProjection
// (pooled), both Linear -> SiLU -> Linear. SD3 feeds pooled text projections; the line model feeds
// its style embedding.
#pragma once

#include "models/weights.h"
#include "runtime/dispatcher.h"

namespace quill {

struct TimeTextEmbed {
  static constexpr int64_t kTimeChannels = 256;
  Linear time_linear_1, time_linear_2;  // timestep_embedder.linear_{1,2}
  Linear text_linear_1, text_linear_2;  // text_embedder.linear_{1,2}
  int64_t dim = 0;

  static Result<TimeTextEmbed> load(const ModelFiles& files, int64_t dim, int64_t pooled_dim);
  size_t linear_scratch_floats(const ThreadPool& pool) const;

  // temb [B, D] = time(t) + text(pooled), and temb_act = SiLU(temb) (what every adaLN linear
  // takes). Scratch: tproj [B, 256], tmp [B, D].
  Status forward(const float* timestep, const float* pooled, int64_t B, float* tproj, float* tmp, float* temb,
                 float* temb_act, Dispatcher& ops) const;
};

}  // namespace quill
