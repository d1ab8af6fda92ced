#include "pipeline/sd3_sampler.h"

#include <algorithm>
#include <cstring>

namespace quill {

void cfg_combine(const float* batched, int64_t B, int64_t per_batch, float g, float* v) {
  const float* u = batched;
  const float* c = batched + B * per_batch;
  for (int64_t i = 0; i < B * per_batch; ++i) v[i] = u[i] + g * (c[i] - u[i]);
}

Status sd3_sample(SD3Engine& engine, const SD3SampleRequest& r, std::vector<float>& latents,
                  const StepCallback& on_step) {
  const SD3Config& cfg = engine.model().config();
  const int64_t B = r.batch, C = cfg.in_channels, T = r.text_len;
  const int64_t J = cfg.joint_attention_dim, P = cfg.pooled_projection_dim;
  const int64_t per = C * r.latent_h * r.latent_w;
  if (r.sigmas.size() != r.timesteps.size() + 1 || r.timesteps.empty())
    return invalid_argument("sampler needs N timesteps and N+1 sigmas, got ", r.timesteps.size(), " and ", r.sigmas.size());
  if (int64_t(latents.size()) != B * per)
    return invalid_argument("latents hold ", latents.size(), " floats, expected ", B * per);
  if (!r.cond) return invalid_argument("conditioning is required");
  const bool cfg_on = r.guidance_scale > 1.0f;
  if (cfg_on && !r.uncond) return invalid_argument("guidance scale ", r.guidance_scale, " needs negative conditioning");
  auto check = [&](const SD3Conditioning& c, const char* what) -> Status {
    if (int64_t(c.encoder_hidden_states.size()) != B * T * J || int64_t(c.pooled_projections.size()) != B * P)
      return invalid_argument(what, " conditioning has the wrong size: expected encoder_hidden_states [", B, ", ", T, ", ", J,
                              "] and pooled_projections [", B, ", ", P, "]");
    return Status::ok();
  };
  QUILL_RETURN_IF_ERROR(check(*r.cond, "positive"));
  if (cfg_on) QUILL_RETURN_IF_ERROR(check(*r.uncond, "negative"));

  // The model batch: [uncond; cond] when guiding, else cond alone.
  const int64_t MB = cfg_on ? 2 * B : B;
  std::vector<float> ehs(static_cast<size_t>(MB * T * J)), pooled(static_cast<size_t>(MB * P));
  std::vector<float> x_in(static_cast<size_t>(MB * per)), v_out(static_cast<size_t>(MB * per)), tsteps(static_cast<size_t>(MB));
  std::vector<float> v(static_cast<size_t>(B * per));
  if (cfg_on) {
    std::copy(r.uncond->encoder_hidden_states.begin(), r.uncond->encoder_hidden_states.end(), ehs.begin());
    std::copy(r.cond->encoder_hidden_states.begin(), r.cond->encoder_hidden_states.end(), ehs.begin() + B * T * J);
    std::copy(r.uncond->pooled_projections.begin(), r.uncond->pooled_projections.end(), pooled.begin());
    std::copy(r.cond->pooled_projections.begin(), r.cond->pooled_projections.end(), pooled.begin() + B * P);
  } else {
    ehs = r.cond->encoder_hidden_states;
    pooled = r.cond->pooled_projections;
  }
  const SD3Bucket bucket{MB, r.latent_h, r.latent_w, T};
  const int steps = int(r.timesteps.size());
  for (int i = 0; i < steps; ++i) {
    std::copy(latents.begin(), latents.end(), x_in.begin());
    if (cfg_on) std::copy(latents.begin(), latents.end(), x_in.begin() + B * per);
    std::fill(tsteps.begin(), tsteps.end(), r.timesteps[size_t(i)]);
    QUILL_RETURN_IF_ERROR(engine.forward(bucket, x_in.data(), ehs.data(), pooled.data(), tsteps.data(), v_out.data()));
    const float* vel = v_out.data();
    if (cfg_on) {
      cfg_combine(v_out.data(), B, per, r.guidance_scale, v.data());
      vel = v.data();
    }
    // FlowMatchEulerDiscreteScheduler.step: x + (sigma_next - sigma) * v, in f32.
    const float dt = r.sigmas[size_t(i) + 1] - r.sigmas[size_t(i)];
    for (int64_t j = 0; j < B * per; ++j) latents[size_t(j)] = latents[size_t(j)] + dt * vel[j];
    if (on_step) on_step(i + 1, steps);
  }
  return Status::ok();
}

}  // namespace quill
