// The flow-matching Euler loop with classifier-free guidance, independent of the model:
// each step calls the model ONCE on a batch of 2B ([uncond; cond], as diffusers stacks them) when
// guidance is on, or B when it is off (scale <= 1), mixes v = u + g (c - u), and steps
// x <- x + (sigma_next - sigma) v in f32.
#pragma once

#include <atomic>
#include <functional>
#include <type_traits>
#include <vector>

#include "quill/status.h"

namespace quill {

// Computes velocities for `x` [MB rows of per_sample floats] at model timestep `t`, into `v`.
using VelocityFn = std::function<Status(const float* x, int64_t MB, float t, float* v)>;
using StepCallback = std::function<void(int step, int total)>;

struct FlowLoop {
  int64_t batch = 1;       // B (images being made)
  int64_t per_sample = 0;  // floats per image latent
  float guidance_scale = 1.0f;
  std::vector<float> sigmas;     // N+1 values, last 0
  std::vector<float> timesteps;  // N model timesteps
};

// Progress and cancellation of one sampling run: on_step after every step; when `cancel` is set
// (by another thread), the loop stops before its next step with ErrorCode::kCancelled.
struct StepControl {
  StepControl() = default;
  template <typename F, typename = std::enable_if_t<std::is_invocable_v<F, int, int>>>
  StepControl(F&& f, const std::atomic<bool>* c = nullptr)  // NOLINT(google-explicit-constructor)
      : on_step(std::forward<F>(f)), cancel(c) {}
  StepCallback on_step;
  const std::atomic<bool>* cancel = nullptr;
  bool cancelled() const { return cancel && cancel->load(std::memory_order_relaxed); }
};

// Runs the loop in place on latents [B * per_sample]. Buffers are allocated once per call.
Status run_flow_loop(const FlowLoop& loop, std::vector<float>& latents, const VelocityFn& velocity,
                     const StepControl& control = {});

// v = u + g (c - u) over B rows, where `batched` holds [u (B rows); c (B rows)].
void cfg_combine(const float* batched, int64_t B, int64_t per_sample, float g, float* v);

}  // namespace quill
