// diffusers' FlowMatchEulerDiscreteScheduler, as StableDiffusion3Pipeline uses it: the sigma
// schedule (static shift, or resolution-dependent "dynamic" shift with mu, exponential or linear),
// the timesteps handed to the model (sigma * num_train_timesteps) and the Euler step
//   x <- x + (sigma[i+1] - sigma[i]) * v        (in f32).
// The schedule is computed with diffusers' exact float arithmetic (f32 in the constructor, f64 in
// set_timesteps, rounded to f32 at the end), so sigmas and timesteps match bit for bit.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "quill/status.h"

namespace quill {

struct FlowMatchEulerConfig {
  int64_t num_train_timesteps = 1000;
  double shift = 1.0;
  bool use_dynamic_shifting = false;
  double base_shift = 0.5, max_shift = 1.15;
  int64_t base_image_seq_len = 256, max_image_seq_len = 4096;
  std::string time_shift_type = "exponential";  // or "linear"
  std::optional<double> shift_terminal;
  bool invert_sigmas = false;

  // A diffusers scheduler_config.json. Options Quill does not implement (karras / exponential /
  // beta sigmas, stochastic sampling) are errors rather than silently ignored.
  static Result<FlowMatchEulerConfig> from_json(const nlohmann::json& j);
};

// mu for dynamic shifting from the image's token count (diffusers' calculate_shift).
double flow_match_calculate_shift(int64_t image_seq_len, int64_t base_seq_len = 256, int64_t max_seq_len = 4096,
                                  double base_shift = 0.5, double max_shift = 1.15);

class FlowMatchEulerScheduler {
 public:
  explicit FlowMatchEulerScheduler(FlowMatchEulerConfig config = {});

  // N steps; `mu` is required with dynamic shifting (and ignored without it). Custom `sigmas`
  // (N values, before shifting) replace the default linspace, as the pipeline's `sigmas=` does.
  Status set_timesteps(int num_steps, std::optional<double> mu = std::nullopt,
                       const std::vector<float>* custom_sigmas = nullptr);

  const FlowMatchEulerConfig& config() const { return config_; }
  int num_steps() const { return int(timesteps_.size()); }
  const std::vector<float>& sigmas() const { return sigmas_; }        // N + 1, the last 0 (1 if inverted)
  const std::vector<float>& timesteps() const { return timesteps_; }  // N, what the model receives

  // Step i (0-based): x[j] += (sigma[i+1] - sigma[i]) * v[j], rounded in f32 like PyTorch.
  Status step(int i, const float* v, float* x, int64_t n) const;

 private:
  FlowMatchEulerConfig config_;
  double sigma_min_ = 0, sigma_max_ = 1;  // of the training schedule, as the constructor leaves them
  std::vector<float> sigmas_, timesteps_;
};

}  // namespace quill
