#include "pipeline/sd3_sampler.h"

#include <algorithm>

namespace quill {

Status sd3_sample(SD3Engine& engine, const SD3SampleRequest& r, std::vector<float>& latents,
                  const StepControl& control) {
  const SD3Config& cfg = engine.model().config();
  const int64_t B = r.batch, T = r.text_len, J = cfg.joint_attention_dim, P = cfg.pooled_projection_dim;
  if (!r.cond) return invalid_argument("conditioning is required");
  const bool guided = r.guidance_scale > 1.0f;
  if (guided && !r.uncond) return invalid_argument("guidance scale ", r.guidance_scale, " needs negative conditioning");
  auto check = [&](const SD3Conditioning& c, const char* what) -> Status {
    if (int64_t(c.encoder_hidden_states.size()) != B * T * J || int64_t(c.pooled_projections.size()) != B * P)
      return invalid_argument(what, " conditioning has the wrong size: expected encoder_hidden_states [", B, ", ", T,
                              ", ", J, "] and pooled_projections [", B, ", ", P, "]");
    return Status::ok();
  };
  QUILL_RETURN_IF_ERROR(check(*r.cond, "positive"));
  if (guided) QUILL_RETURN_IF_ERROR(check(*r.uncond, "negative"));

  const int64_t MB = guided ? 2 * B : B;
  std::vector<float> ehs, pooled, tsteps(static_cast<size_t>(MB));
  if (guided) {
    ehs = r.uncond->encoder_hidden_states;
    ehs.insert(ehs.end(), r.cond->encoder_hidden_states.begin(), r.cond->encoder_hidden_states.end());
    pooled = r.uncond->pooled_projections;
    pooled.insert(pooled.end(), r.cond->pooled_projections.begin(), r.cond->pooled_projections.end());
  } else {
    ehs = r.cond->encoder_hidden_states;
    pooled = r.cond->pooled_projections;
  }
  const SD3Bucket bucket{MB, r.latent_h, r.latent_w, T};
  FlowLoop loop{B, cfg.in_channels * r.latent_h * r.latent_w, r.guidance_scale, r.sigmas, r.timesteps};
  return run_flow_loop(
      loop, latents,
      [&](const float* x, int64_t mb, float t, float* v) -> Status {
        std::fill(tsteps.begin(), tsteps.end(), t);
        (void)mb;
        return engine.forward(bucket, x, ehs.data(), pooled.data(), tsteps.data(), v);
      },
      control);
}

}  // namespace quill
