// Shared between the AutoencoderKL source files: the activation workspace and the forward passes.
#pragma once

#include <memory>

#include "models/autoencoder_kl.h"

namespace quill::vae {

struct WorkspaceSizes {
  size_t act = 0;     // floats per activation buffer (three of them)
  size_t attn = 0;    // mid-block attention: q, k, v and the score tile
  size_t latent = 0;  // the post_quant_conv output / a latent tile
};

// Uninitialised buffers (never read before written), grown by reserve() and kept across samples.
struct Workspace {
  std::unique_ptr<float[]> buf[3];
  std::unique_ptr<float[]> attn, latent;
  size_t act_cap = 0, attn_cap = 0, latent_cap = 0;
  void reserve(const WorkspaceSizes& s);
  float* b(int i) { return buf[i].get(); }
};

WorkspaceSizes decoder_sizes(const AutoencoderKLConfig& c, int64_t h, int64_t w);
WorkspaceSizes encoder_sizes(const AutoencoderKLConfig& c, int64_t H, int64_t W);

// z [latent, h, w] (post_quant_conv already applied) -> out [out_channels, h*f, w*f].
Status run_decoder(const Coder& d, const AutoencoderKLConfig& c, const float* z, int64_t h, int64_t w, float* out,
                   Workspace& ws, Dispatcher& ops);
// img [in_channels, H, W] -> mean [latent, h, w] (quant_conv applied when given).
Status run_encoder(const Coder& e, const Conv2dWeights* quant_conv, const AutoencoderKLConfig& c, const float* img,
                   int64_t H, int64_t W, float* mean, Workspace& ws, Dispatcher& ops);

}  // namespace quill::vae
