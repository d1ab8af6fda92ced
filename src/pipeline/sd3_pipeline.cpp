#include "pipeline/sd3_pipeline.h"

#include <algorithm>
#include <chrono>
#include <cmath>

#include "core/rng.h"

namespace quill {

Result<Tensor> sd3_generate(SD3Engine& engine, const AutoencoderKL& vae, const SD3GenerateRequest& r,
                            SD3GenerateTimings* timings, const StepControl& control) {
  const SD3Config& cfg = engine.model().config();
  const int64_t f = vae.config().downscale();
  if (r.steps <= 0 || r.steps > 1000) return invalid_argument("steps must be in [1, 1000], got ", r.steps);
  if (r.batch <= 0 || r.batch > 64) return invalid_argument("batch must be in [1, 64], got ", r.batch);
  if (r.height <= 0 || r.width <= 0 || r.height % (f * cfg.patch_size) || r.width % (f * cfg.patch_size))
    return invalid_argument("image size ", r.width, "x", r.height, " must be a positive multiple of ",
                            f * cfg.patch_size, " (VAE factor ", f, " x patch size ", cfg.patch_size, ")");
  if (vae.config().latent_channels != cfg.in_channels)
    return invalid_argument("the VAE has ", vae.config().latent_channels, " latent channels but the transformer takes ",
                            cfg.in_channels);
  const int64_t h = r.height / f, w = r.width / f, C = cfg.in_channels;
  QUILL_RETURN_IF_ERROR(engine.model().validate({r.guidance_scale > 1.0f ? 2 * r.batch : r.batch, h, w, r.text_len}));

  auto finite = [](const std::vector<float>& v, const char* what) -> Status {
    const int64_t i = first_non_finite(v.data(), int64_t(v.size()));
    if (i >= 0) return invalid_argument(what, " holds a non-finite value (NaN or Inf) at element ", i);
    return Status::ok();
  };
  if (r.cond) {
    QUILL_RETURN_IF_ERROR(finite(r.cond->encoder_hidden_states, "encoder_hidden_states (conditioning)"));
    QUILL_RETURN_IF_ERROR(finite(r.cond->pooled_projections, "pooled_projections (conditioning)"));
  }
  if (r.negative) {
    QUILL_RETURN_IF_ERROR(finite(r.negative->encoder_hidden_states, "encoder_hidden_states (negative)"));
    QUILL_RETURN_IF_ERROR(finite(r.negative->pooled_projections, "pooled_projections (negative)"));
  }
  if (r.initial_latents) QUILL_RETURN_IF_ERROR(finite(*r.initial_latents, "the initial latents"));
  if (!std::isfinite(r.guidance_scale) || !std::isfinite(r.shift) || !(r.shift > 0))
    return invalid_argument("guidance scale and shift must be finite (shift > 0), got ", r.guidance_scale, " and ",
                            r.shift);
  std::vector<float> latents(static_cast<size_t>(r.batch * C * h * w));
  if (r.initial_latents) {
    if (r.initial_latents->size() != latents.size())
      return invalid_argument("initial latents hold ", r.initial_latents->size(), " floats, expected [", r.batch, ", ",
                              C, ", ", h, ", ", w, "]");
    latents = *r.initial_latents;
  } else {
    fill_normal(r.seed, latents.data(), int64_t(latents.size()));
  }

  FlowMatchEulerConfig sc;
  sc.shift = r.shift;
  FlowMatchEulerScheduler scheduler(sc);
  QUILL_RETURN_IF_ERROR(scheduler.set_timesteps(r.steps));
  SD3SampleRequest s;
  s.batch = r.batch;
  s.latent_h = h;
  s.latent_w = w;
  s.text_len = r.text_len;
  s.cond = r.cond;
  s.uncond = r.negative;
  s.guidance_scale = r.guidance_scale;
  s.sigmas = scheduler.sigmas();
  s.timesteps = scheduler.timesteps();
  const auto t0 = std::chrono::steady_clock::now();
  QUILL_RETURN_IF_ERROR(sd3_sample(engine, s, latents, control));
  const auto t1 = std::chrono::steady_clock::now();

  Tensor z(latents.data(), DType::kF32, {r.batch, C, h, w});
  QUILL_ASSIGN_OR_RETURN(Tensor image, vae.decode(z, engine.ops(), r.tiling));
  if (first_non_finite(image.data_as<float>(), image.numel()) >= 0)
    return non_finite(
        "non-finite values (NaN or Inf) in the VAE decoder's output (the latents were finite): "
        "the VAE's weights produce them");
  const auto t2 = std::chrono::steady_clock::now();
  if (timings) {
    timings->denoise_ms = std::chrono::duration<double, std::milli>(t1 - t0).count();
    timings->decode_ms = std::chrono::duration<double, std::milli>(t2 - t1).count();
    timings->steps = r.steps;
  }
  return image;
}

}  // namespace quill
