#include "pipeline/flux2_pipeline.h"

#include <chrono>
#include <cmath>
#include <cstring>

#include "core/rng.h"

namespace quill {

FlowMatchEulerConfig flux2_klein_scheduler_config() {
  FlowMatchEulerConfig c;
  c.num_train_timesteps = 1000;
  c.shift = 3.0;
  c.use_dynamic_shifting = true;
  c.time_shift_type = "exponential";
  return c;
}

double flux2_empirical_mu(int64_t image_seq_len, int num_steps) {
  const double a1 = 8.73809524e-05, b1 = 1.89833333;
  const double a2 = 0.00016927, b2 = 0.45666666;
  if (image_seq_len > 4300) return a2 * double(image_seq_len) + b2;
  const double m_200 = a2 * double(image_seq_len) + b2;
  const double m_10 = a1 * double(image_seq_len) + b1;
  const double a = (m_200 - m_10) / 190.0;
  const double b = m_200 - 200.0 * a;
  return a * double(num_steps) + b;
}

namespace {

// np.linspace(1.0, 1 / n, n) in float64, then cast to f32 as set_timesteps does.
std::vector<float> klein_sigmas(int n) {
  std::vector<float> s(static_cast<size_t>(n), 0.0f);
  const double start = 1.0, stop = 1.0 / double(n);
  const double step = n > 1 ? (stop - start) / double(n - 1) : 0.0;
  for (int i = 0; i < n; ++i) s[size_t(i)] = float(double(i) * step + start);
  if (n > 1) s[size_t(n - 1)] = float(stop);
  return s;
}

Status check_finite(const std::vector<float>& v, const char* what) {
  const int64_t i = first_non_finite(v.data(), int64_t(v.size()));
  if (i >= 0) return invalid_argument(what, " holds a non-finite value (NaN or Inf) at element ", i);
  return Status::ok();
}

}  // namespace

Result<Tensor> flux2_generate(Flux2Engine& engine, const AutoencoderKL& vae, const Flux2LatentStats& stats,
                              const Flux2GenerateRequest& r, Flux2GenerateTimings* timings,
                              const StepControl& control) {
  const Flux2Config& cfg = engine.model().config();
  const int64_t f = vae.config().downscale(), C4 = cfg.in_channels, J = cfg.joint_attention_dim;
  if (!r.cond) return invalid_argument("FLUX.2: no prompt embeddings given");
  const int64_t B = r.cond->batch, T = r.cond->text_len;
  if (r.steps <= 0 || r.steps > 1000) return invalid_argument("steps must be in [1, 1000], got ", r.steps);
  if (B <= 0 || B > 64) return invalid_argument("batch must be in [1, 64], got ", B);
  if (r.height <= 0 || r.width <= 0 || r.height % (2 * f) || r.width % (2 * f))
    return invalid_argument("image size ", r.width, "x", r.height, " must be a positive multiple of ", 2 * f,
                            " (VAE factor ", f, " x the 2x2 latent patches)");
  if (4 * vae.config().latent_channels != C4 || stats.latent_channels != vae.config().latent_channels)
    return invalid_argument("the VAE has ", vae.config().latent_channels, " latent channels (", 4 * vae.config().latent_channels,
                            " after 2x2 patches) but the transformer takes ", C4);
  if (int64_t(r.cond->prompt_embeds.size()) != B * T * J)
    return invalid_argument("prompt embeddings hold ", r.cond->prompt_embeds.size(), " floats, expected [", B, ", ",
                            T, ", ", J, "]");
  if (!std::isfinite(r.guidance_scale)) return invalid_argument("guidance scale must be finite");
  const bool guided = r.guidance_scale > 1.0f && !r.distilled;
  if (guided) {
    if (!r.negative) return invalid_argument("guidance scale ", r.guidance_scale, " > 1 needs negative embeddings");
    if (r.negative->batch != B || int64_t(r.negative->prompt_embeds.size()) != B * r.negative->text_len * J)
      return invalid_argument("negative embeddings must be [", B, ", *, ", J, "]");
    QUILL_RETURN_IF_ERROR(check_finite(r.negative->prompt_embeds, "negative_prompt_embeds"));
  }
  QUILL_RETURN_IF_ERROR(check_finite(r.cond->prompt_embeds, "prompt_embeds"));
  const int64_t h = r.height / (2 * f), w = r.width / (2 * f), N = h * w, per = N * C4;
  const int64_t Tn = guided ? r.negative->text_len : T;
  const bool one_batch = guided && Tn == T;
  QUILL_RETURN_IF_ERROR(engine.model().validate({one_batch ? 2 * B : B, N, T}));
  if (guided && !one_batch) QUILL_RETURN_IF_ERROR(engine.model().validate({B, N, Tn}));

  // Initial latents [B, 4C, h, w] -> tokens [B, h*w, 4C] (_pack_latents).
  std::vector<float> chw(size_t(B * per));
  if (r.initial_latents) {
    if (r.initial_latents->size() != chw.size())
      return invalid_argument("initial latents hold ", r.initial_latents->size(), " floats, expected [", B, ", ", C4,
                              ", ", h, ", ", w, "]");
    QUILL_RETURN_IF_ERROR(check_finite(*r.initial_latents, "the initial latents"));
    chw = *r.initial_latents;
  } else {
    fill_normal(r.seed, chw.data(), int64_t(chw.size()));
  }
  std::vector<float> latents(chw.size());
  for (int64_t b = 0; b < B; ++b)
    for (int64_t c = 0; c < C4; ++c)
      for (int64_t t = 0; t < N; ++t) latents[size_t((b * N + t) * C4 + c)] = chw[size_t((b * C4 + c) * N + t)];

  // Position ids: latent (0, y, x, 0), text (0, 0, 0, l); the model's ids have one column per RoPE axis.
  const int64_t axes = cfg.id_axes();
  if (axes != 4) return unsupported("FLUX.2 pipelines use 4-axis position ids; the model has ", axes, " RoPE axes");
  std::vector<float> img_ids(size_t(N * 4), 0.0f), txt_ids(size_t(std::max(T, Tn) * 4), 0.0f);
  for (int64_t y = 0; y < h; ++y)
    for (int64_t x = 0; x < w; ++x) {
      img_ids[size_t((y * w + x) * 4 + 1)] = float(y);
      img_ids[size_t((y * w + x) * 4 + 2)] = float(x);
    }
  for (int64_t l = 0; l < std::max(T, Tn); ++l) txt_ids[size_t(l * 4 + 3)] = float(l);

  FlowMatchEulerScheduler scheduler(r.scheduler);
  const std::vector<float> sigmas = klein_sigmas(r.steps);
  QUILL_RETURN_IF_ERROR(scheduler.set_timesteps(r.steps, flux2_empirical_mu(N, r.steps), &sigmas));

  // Text rows for one forward: [negative; prompt] when guided in one batch.
  std::vector<float> text_2b;
  if (one_batch) {
    text_2b = r.negative->prompt_embeds;
    text_2b.insert(text_2b.end(), r.cond->prompt_embeds.begin(), r.cond->prompt_embeds.end());
  }
  std::vector<float> sig(size_t(2 * B));
  auto run = [&](const float* x, int64_t rows, int64_t text_len, const float* text, float sigma, float* v) -> Status {
    for (int64_t i = 0; i < rows; ++i) sig[size_t(i)] = sigma;
    Flux2Inputs in{x, text, sig.data(), nullptr, img_ids.data(), txt_ids.data()};
    return engine.forward(Flux2Bucket{rows, N, text_len}, in, v);
  };
  const VelocityFn velocity = [&](const float* x, int64_t MB, float t, float* v) -> Status {
    const float sigma = t / 1000.0f;  // the pipeline passes timestep / 1000; the model multiplies back in f32
    if (!guided) return run(x, MB, T, r.cond->prompt_embeds.data(), sigma, v);
    if (one_batch) return run(x, MB, T, text_2b.data(), sigma, v);
    QUILL_RETURN_IF_ERROR(run(x, B, Tn, r.negative->prompt_embeds.data(), sigma, v));
    return run(x + B * per, B, T, r.cond->prompt_embeds.data(), sigma, v + B * per);
  };
  FlowLoop loop;
  loop.batch = B;
  loop.per_sample = per;
  loop.guidance_scale = guided ? r.guidance_scale : 1.0f;
  loop.sigmas = scheduler.sigmas();
  loop.timesteps = scheduler.timesteps();
  const auto t0 = std::chrono::steady_clock::now();
  QUILL_RETURN_IF_ERROR(run_flow_loop(loop, latents, velocity, control));
  const auto t1 = std::chrono::steady_clock::now();

  std::vector<float> z(size_t(B * per));
  stats.tokens_to_latents(latents.data(), B, h, w, z.data());
  QUILL_ASSIGN_OR_RETURN(
      Tensor image,
      vae.decode_unscaled(Tensor(z.data(), DType::kF32, {B, vae.config().latent_channels, 2 * h, 2 * w}),
                          engine.ops(), r.tiling));
  if (first_non_finite(image.data_as<float>(), image.numel()) >= 0)
    return non_finite("non-finite values (NaN or Inf) in the VAE decoder's output (the latents were finite): "
                      "the VAE's weights produce them");
  if (timings) {
    timings->denoise_ms = std::chrono::duration<double, std::milli>(t1 - t0).count();
    timings->decode_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t1).count();
    timings->steps = r.steps;
  }
  return image;
}

}  // namespace quill
