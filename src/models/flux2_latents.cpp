#include "models/flux2_latents.h"

#include <cmath>

#include "io/json_util.h"
#include "models/weights.h"

namespace quill {

Result<Flux2LatentStats> Flux2LatentStats::load(const ModelFiles& f, int64_t C) {
  const nlohmann::json& cfg = f.config();
  if (auto it = cfg.find("patch_size"); it != cfg.end() && !it->is_null()) {
    const bool two_by_two = it->is_array() && it->size() == 2 && (*it)[0] == 2 && (*it)[1] == 2;
    if (!two_by_two)
      return unsupported("AutoencoderKLFlux2 patch_size ", dump_json(*it), " (FLUX.2 packs 2x2 patches)")
          .with_file(f.path());
  }
  double eps = 1e-4;  // diffusers' default batch_norm_eps
  if (auto it = cfg.find("batch_norm_eps"); it != cfg.end() && !it->is_null()) {
    if (!it->is_number() || !(it->get<double>() >= 0.0) || !(it->get<double>() < 1.0))
      return invalid_file("config 'batch_norm_eps' must be a number in [0, 1)").with_file(f.path());
    eps = it->get<double>();
  }
  Flux2LatentStats s;
  s.latent_channels = C;
  QUILL_ASSIGN_OR_RETURN(s.mean, load_f32(f, "bn.running_mean", {4 * C}));
  QUILL_ASSIGN_OR_RETURN(std::vector<float> var, load_f32(f, "bn.running_var", {4 * C}));
  s.std.resize(var.size());
  for (size_t i = 0; i < var.size(); ++i) {
    if (!(var[i] >= 0.0f) || !std::isfinite(var[i]))
      return invalid_file("bn.running_var[", i, "] = ", var[i], " is not a finite variance").with_file(f.path());
    s.std[i] = std::sqrt(var[i] + float(eps));
    if (!(s.std[i] > 0.0f))
      return invalid_file("bn.running_var[", i, "] + batch_norm_eps is 0: the latents cannot be normalised")
          .with_file(f.path());
  }
  for (float m : s.mean)
    if (!std::isfinite(m)) return invalid_file("bn.running_mean holds a non-finite value").with_file(f.path());
  return s;
}

void Flux2LatentStats::tokens_to_latents(const float* tokens, int64_t B, int64_t h, int64_t w, float* lat) const {
  const int64_t C = latent_channels, H = 2 * h, W = 2 * w;
  for (int64_t b = 0; b < B; ++b)
    for (int64_t y = 0; y < h; ++y)
      for (int64_t x = 0; x < w; ++x) {
        const float* t = tokens + (b * h * w + y * w + x) * 4 * C;
        for (int64_t c = 0; c < C; ++c)
          for (int64_t ky = 0; ky < 2; ++ky)
            for (int64_t kx = 0; kx < 2; ++kx) {
              const int64_t ch = c * 4 + ky * 2 + kx;
              lat[((b * C + c) * H + 2 * y + ky) * W + 2 * x + kx] = t[ch] * std[size_t(ch)] + mean[size_t(ch)];
            }
      }
}

void Flux2LatentStats::latents_to_tokens(const float* lat, int64_t B, int64_t h, int64_t w, float* tokens) const {
  const int64_t C = latent_channels, H = 2 * h, W = 2 * w;
  for (int64_t b = 0; b < B; ++b)
    for (int64_t y = 0; y < h; ++y)
      for (int64_t x = 0; x < w; ++x) {
        float* t = tokens + (b * h * w + y * w + x) * 4 * C;
        for (int64_t c = 0; c < C; ++c)
          for (int64_t ky = 0; ky < 2; ++ky)
            for (int64_t kx = 0; kx < 2; ++kx) {
              const int64_t ch = c * 4 + ky * 2 + kx;
              t[ch] = (lat[((b * C + c) * H + 2 * y + ky) * W + 2 * x + kx] - mean[size_t(ch)]) / std[size_t(ch)];
            }
      }
}

}  // namespace quill
