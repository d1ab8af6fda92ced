// The denoising loop of StableDiffusion3Pipeline: flow-matching Euler steps with classifier-free
// guidance computed from ONE forward of batch 2B (uncond stacked before cond, as diffusers does),
// or batch B when guidance is off (scale <= 1).
#pragma once

#include <functional>
#include <vector>

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
  std::vector<float> sigmas;     // N+1 values, last 0 (from FlowMatchEulerScheduler)
  std::vector<float> timesteps;  // N values passed to the model (sigma * num_train_timesteps)
};

// Called after each step: (step index, total steps).
using StepCallback = std::function<void(int, int)>;

// Runs the loop in place on latents [B, C, H, W]. Allocates its batch buffers once per call,
// outside the per-step forward.
Status sd3_sample(SD3Engine& engine, const SD3SampleRequest& req, std::vector<float>& latents,
                  const StepCallback& on_step = nullptr);

// Does the classifier-free guidance mix for one step: v = u + g (c - u), where `batched` holds
// [u (B rows); c (B rows)] of `per_batch` floats each.
void cfg_combine(const float* batched, int64_t B, int64_t per_batch, float g, float* v);

}  // namespace quill
