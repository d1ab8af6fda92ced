#include "pipeline/flow_sampler.h"

#include <algorithm>
#include <cmath>

namespace quill {

void cfg_combine(const float* batched, int64_t B, int64_t per, float g, float* v) {
  const float* u = batched;
  const float* c = batched + B * per;
  for (int64_t i = 0; i < B * per; ++i) v[i] = u[i] + g * (c[i] - u[i]);
}

Status run_flow_loop(const FlowLoop& loop, std::vector<float>& latents, const VelocityFn& velocity,
                     const StepControl& control) {
  const int64_t B = loop.batch, per = loop.per_sample;
  if (loop.timesteps.empty() || loop.sigmas.size() != loop.timesteps.size() + 1)
    return invalid_argument("sampler needs N timesteps and N+1 sigmas, got ", loop.timesteps.size(), " and ",
                            loop.sigmas.size());
  if (int64_t(latents.size()) != B * per)
    return invalid_argument("latents hold ", latents.size(), " floats, expected ", B * per);
  const bool guided = loop.guidance_scale > 1.0f;
  const int64_t MB = guided ? 2 * B : B;
  std::vector<float> x_in(static_cast<size_t>(MB * per)), v_out(static_cast<size_t>(MB * per));
  std::vector<float> v(guided ? static_cast<size_t>(B * per) : 0);
  const int steps = int(loop.timesteps.size());
  for (int i = 0; i < steps; ++i) {
    if (control.cancelled()) return make_error(ErrorCode::kCancelled, "cancelled before step ", i + 1, " of ", steps);
    std::copy(latents.begin(), latents.end(), x_in.begin());
    if (guided) std::copy(latents.begin(), latents.end(), x_in.begin() + B * per);
    QUILL_RETURN_IF_ERROR(velocity(x_in.data(), MB, loop.timesteps[size_t(i)], v_out.data()));
    const float* vel = v_out.data();
    if (guided) {
      cfg_combine(v_out.data(), B, per, loop.guidance_scale, v.data());
      vel = v.data();
    }
    const float dt = loop.sigmas[size_t(i) + 1] - loop.sigmas[size_t(i)];
    bool finite = true;
    for (int64_t j = 0; j < B * per; ++j) {
      latents[size_t(j)] += dt * vel[j];
      finite &= std::isfinite(latents[size_t(j)]);
    }
    // Never a black image from NaN: stop where the first non-finite value appears.
    if (!finite)
      return non_finite("non-finite values (NaN or Inf) in the latents after sampling step ", i + 1, " of ", steps,
                          ": the conditioning, the settings or the model's weights produce them");
    if (control.on_step) control.on_step(i + 1, steps);
  }
  return Status::ok();
}

}  // namespace quill
