// Shared between the AutoencoderKL source files: the activation workspace and the forward passes.
#pragma once

#include <memory>
#include <mutex>

#include "core/arena.h"
#include "runtime/plan_cache.h"

#include "models/autoencoder_kl.h"

namespace quill::vae {

struct WorkspaceSizes {
  size_t act = 0;     // floats per activation buffer (three of them)
  size_t attn = 0;    // mid-block attention: q, k, v and the score tile
  size_t latent = 0;  // the post_quant_conv output / a latent tile
};

// The activation buffers of one decode or encode size, carved once from an arena (a plan): the
// three activation buffers, the mid-block attention's q, k, v and score tile, and the latent.
struct Workspace {
  Arena arena;
  float* buf[3] = {nullptr, nullptr, nullptr};
  float *attn = nullptr, *latent = nullptr;
  void carve(const WorkspaceSizes& s);
  float* b(int i) { return buf[i]; }
};

// One plan per (decode | encode, h, w); its mutex makes concurrent calls of one size take turns.
struct PlanKey {
  int kind = 0;  // 0 decode (latent h x w), 1 encode (image H x W)
  int64_t h = 0, w = 0;
  auto operator<=>(const PlanKey&) const = default;
};
struct Plan {
  std::mutex mu;
  Workspace ws;
  double build_ms = 0;
};
class Plans : public PlanCache<PlanKey, Plan> {
 public:
  using PlanCache<PlanKey, Plan>::PlanCache;
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
