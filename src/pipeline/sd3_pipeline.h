// StableDiffusion3Pipeline from precomputed conditioning (text encoders come later): initial
// latents (seeded or given), the flow-matching Euler loop with batched CFG, then the VAE decode
// (latents / scaling_factor + shift_factor). Pixels: pipeline/image_postprocess.h.
#pragma once

#include <memory>
#include <optional>
#include <vector>

#include "models/autoencoder_kl.h"
#include "pipeline/flow_match_euler.h"
#include "pipeline/sd3_sampler.h"
#include "runtime/sd3_engine.h"

namespace quill {

struct SD3GenerateRequest {
  int64_t batch = 1, height = 0, width = 0, text_len = 0;  // image size in pixels
  const SD3Conditioning* cond = nullptr;
  const SD3Conditioning* negative = nullptr;
  int steps = 28;
  float guidance_scale = 7.0f;
  double shift = 3.0;
  uint64_t seed = 0;
  const std::vector<float>* initial_latents = nullptr;  // [B, C, h, w]; seeded noise when null
  VaeTiling tiling;                                     // off by default
};

struct SD3GenerateTimings {
  double denoise_ms = 0, decode_ms = 0;
  int steps = 0;
};

// Returns the decoder output [B, 3, H, W] (nominally [-1, 1], unclamped).
Result<Tensor> sd3_generate(SD3Engine& engine, const AutoencoderKL& vae, const SD3GenerateRequest& req,
                            SD3GenerateTimings* timings = nullptr, const StepControl& control = {});

}  // namespace quill
