// The FLUX.2 latent space between the transformer and AutoencoderKLFlux2 (diffusers
// autoencoder_kl_flux2.py and Flux2KleinPipeline): the VAE's 32-channel latent is cut into 2x2
// patches (128 channels), normalised per channel by the VAE's BatchNorm running statistics
// (`bn.running_mean`, `bn.running_var`, eps = batch_norm_eps; affine-free) and packed to tokens
// [B, h*w, 4C] in row-major (h, w) order, the order of the pipeline's latent ids (0, h, w, 0).
#pragma once

#include <cstdint>
#include <vector>

#include "io/model_files.h"
#include "quill/status.h"

namespace quill {

struct Flux2LatentStats {
  int64_t latent_channels = 0;  // C; the patchified latent has 4C channels
  std::vector<float> mean, std;  // [4C]; std = sqrt(running_var + eps) in f32, as torch computes it

  // From the AutoencoderKLFlux2's files (config batch_norm_eps and patch_size [2, 2]).
  static Result<Flux2LatentStats> load(const ModelFiles& vae_files, int64_t latent_channels);

  // tokens [B, h*w, 4C] -> VAE latents [B, C, 2h, 2w]: x * std + mean, then _unpatchify_latents.
  void tokens_to_latents(const float* tokens, int64_t B, int64_t h, int64_t w, float* latents) const;
  // VAE latents [B, C, 2h, 2w] -> tokens [B, h*w, 4C]: _patchify_latents, (x - mean) / std, pack.
  void latents_to_tokens(const float* latents, int64_t B, int64_t h, int64_t w, float* tokens) const;
};

}  // namespace quill
