// Sampling a handwriting line with the line model: the glyph line conditions the content tokens,
// the style embedding conditions the pooled vector, and classifier-free guidance drops the style
// (a zero style embedding is the unconditional input, as in training's style dropout). Each step
// is ONE forward of batch 2B when guidance is on.
#pragma once

#include <cstdint>
#include <vector>

#include "pipeline/flow_sampler.h"
#include "runtime/line_engine.h"

namespace quill {

// The sigma schedule Quill's line model is trained for: N+1 values sigma_i = shift(start (1 - i/N)),
// shift(s) = k s / (1 + (k - 1) s) (static shift k, as FlowMatchEulerDiscreteScheduler), last 0;
// model timesteps are sigma * 1000. start = 1 samples from pure noise; start < 1 begins from the
// glyph line itself noised to sigma = shift(start) (SDEdit; see LineSampleRequest::start_sigma).
void line_sigma_schedule(int steps, float shift, std::vector<float>* sigmas, std::vector<float>* timesteps,
                         float start = 1.0f);

// Glyph pixels (gray 8-bit, 255 = paper) -> model input in [-1, 1] with ink = +1, averaged over
// downscale x downscale cells to latent resolution. out: [H/downscale, W/downscale].
void glyphs_to_model_input(const uint8_t* gray, int64_t H, int64_t W, int64_t downscale, float* out);

// Model output in [-1, 1] (paper = +1) -> gray 8-bit.
void line_output_to_gray(const float* x, int64_t n, uint8_t* gray);

struct LineSampleRequest {
  int64_t batch = 1, latent_w = 0;
  const float* glyphs = nullptr;  // [B, G, Hl, Wl]
  const float* style = nullptr;   // [B, style_dim]; null = unconditional style
  float guidance_scale = 1.0f;
  int steps = 20;
  float shift = 1.0f;
  uint64_t seed = 0;
  // Per-row seeds [B]: row b's noise comes from row_seeds[b] alone (so a row's image does not depend
  // on the rows batched with it); null: one stream from `seed` over the whole batch.
  const uint64_t* row_seeds = nullptr;
  // Ragged batch: row b's real content is its first row_latent_w[b] latent columns (a multiple of
  // the patch size, <= latent_w), the rest padding the model never attends to. Its noise is drawn
  // at its own width (as a batch of that width would), the padding starts at zero. Needs row_seeds.
  const int64_t* row_latent_w = nullptr;
  // 1: start from pure noise. < 1: start from x = s eps + (1 - s) g, s = shift(start_sigma), where g
  // is the glyph line in output space (ink -1, paper +1): the sampler then only has to turn the
  // plain glyphs into the hand (needs in_channels == glyph_channels).
  float start_sigma = 1.0f;
  // With guidance: the unconditional rows also get a blank glyph line (all -1, no text), so the
  // guidance pushes towards the text as well as the style. For models trained with blanked glyph
  // lines among their style-dropped rows (train_line_model.py --glyph-dropout).
  bool guide_glyph = false;
  // Run on the plan of this many model rows (>= the batch, 2B with guidance) instead of an exact
  // one, so a long request keeps one plan per width; 0: the exact batch.
  int64_t plan_rows = 0;
};

// Returns the sampled line [B, Cout, Hl, Wl] in the model's output space.
Status line_sample(LineEngine& engine, const LineSampleRequest& req, std::vector<float>* out,
                   const StepControl& control = {});

}  // namespace quill
