// The denoising loop of StableDiffusion3Pipeline on Quill's SD3 engine: conditioning stacked as
// [negative; positive] so each step is one forward of batch 2B (see flow_sampler.h).
#pragma once

#include <vector>

#include "pipeline/flow_sampler.h"
#include "runtime/sd3_engine.h"

namespace quill {

struct SD3Conditioning {
  std::vector<float> encoder_hidden_states;  // [B, T, J]
  std::vector<float> pooled_projections;     // [B, P]
};

struct SD3SampleRequest {
  int64_t batch = 1, latent_h = 0, latent_w = 0, text_len = 0;
  const SD3Conditioning* cond = nullptr;
  const SD3Conditioning* uncond = nullptr;  // required when guidance_scale > 1
  float guidance_scale = 1.0f;
  std::vector<float> sigmas;     // N+1 values, last 0
  std::vector<float> timesteps;  // N values passed to the model
};

// Runs the loop in place on latents [B, C, H, W].
Status sd3_sample(SD3Engine& engine, const SD3SampleRequest& req, std::vector<float>& latents,
                  const StepControl& control = {});

}  // namespace quill
