#include "pipeline/flow_match_euler.h"

#include <cmath>

#include "io/json_util.h"

namespace quill {

namespace {
Status read_key(const nlohmann::json& j, const char* key, auto& out) {
  return read_json_key(j, key, out, "scheduler config");
}
}  // namespace

Result<FlowMatchEulerConfig> FlowMatchEulerConfig::from_json(const nlohmann::json& j) {
  if (!j.is_object()) return invalid_file("scheduler config must be a JSON object");
  FlowMatchEulerConfig c;
  QUILL_RETURN_IF_ERROR(read_key(j, "num_train_timesteps", c.num_train_timesteps));
  QUILL_RETURN_IF_ERROR(read_key(j, "shift", c.shift));
  QUILL_RETURN_IF_ERROR(read_key(j, "use_dynamic_shifting", c.use_dynamic_shifting));
  QUILL_RETURN_IF_ERROR(read_key(j, "base_shift", c.base_shift));
  QUILL_RETURN_IF_ERROR(read_key(j, "max_shift", c.max_shift));
  QUILL_RETURN_IF_ERROR(read_key(j, "base_image_seq_len", c.base_image_seq_len));
  QUILL_RETURN_IF_ERROR(read_key(j, "max_image_seq_len", c.max_image_seq_len));
  QUILL_RETURN_IF_ERROR(read_key(j, "time_shift_type", c.time_shift_type));
  QUILL_RETURN_IF_ERROR(read_key(j, "invert_sigmas", c.invert_sigmas));
  if (auto it = j.find("shift_terminal"); it != j.end() && !it->is_null()) {
    if (!it->is_number()) return invalid_file("scheduler config key 'shift_terminal' must be a number");
    if (it->get<double>() != 0.0) c.shift_terminal = it->get<double>();  // diffusers tests truthiness
  }
  for (const char* key : {"use_karras_sigmas", "use_exponential_sigmas", "use_beta_sigmas", "stochastic_sampling"}) {
    bool on = false;
    QUILL_RETURN_IF_ERROR(read_key(j, key, on));
    if (on) return unsupported("FlowMatchEulerDiscreteScheduler option '", key, "' is not implemented");
  }
  if (c.time_shift_type != "exponential" && c.time_shift_type != "linear")
    return invalid_file("time_shift_type must be 'exponential' or 'linear', got '", c.time_shift_type, "'");
  if (c.num_train_timesteps < 1) return invalid_file("num_train_timesteps must be positive");
  return c;
}

double flow_match_calculate_shift(int64_t image_seq_len, int64_t base_seq_len, int64_t max_seq_len, double base_shift,
                                  double max_shift) {
  const double m = (max_shift - base_shift) / double(max_seq_len - base_seq_len);
  const double b = base_shift - m * double(base_seq_len);
  return double(image_seq_len) * m + b;
}

FlowMatchEulerScheduler::FlowMatchEulerScheduler(FlowMatchEulerConfig config) : config_(std::move(config)) {
  // __init__: timesteps 1..N (f32), sigmas = t / N in f32, statically shifted in f32. Only the
  // ends of this training schedule are used later.
  const float N = float(config_.num_train_timesteps);
  auto init_sigma = [&](float t) {
    float s = t / N;
    if (!config_.use_dynamic_shifting) {
      const float shift = float(config_.shift), shift_m1 = float(config_.shift - 1.0);
      s = shift * s / (1.0f + shift_m1 * s);
    }
    return s;
  };
  sigma_max_ = init_sigma(N);
  sigma_min_ = init_sigma(1.0f);
}

namespace {

// Steps 2 and 3 of set_timesteps in the sigmas' own precision: f64 for the default linspace, f32
// for caller-given sigmas (NumPy keeps float32 arrays float32 against Python scalars).
template <typename T>
void shift_sigmas(std::vector<T>& s, const FlowMatchEulerConfig& c, std::optional<double> mu) {
  for (auto& v : s) {
    if (c.use_dynamic_shifting) {
      const T r = T(1) / v - T(1);  // (1/t - 1) ** 1.0 is exact
      v = c.time_shift_type == "linear" ? T(*mu) / (T(*mu) + r) : T(std::exp(*mu)) / (T(std::exp(*mu)) + r);
    } else {
      v = T(c.shift) * v / (T(1) + T(c.shift - 1.0) * v);
    }
  }
  if (c.shift_terminal) {  // stretch so the schedule ends at shift_terminal
    const T scale = (T(1) - s.back()) / (T(1) - T(*c.shift_terminal));
    for (auto& v : s) v = T(1) - ((T(1) - v) / scale);
  }
}

}  // namespace

Status FlowMatchEulerScheduler::set_timesteps(int num_steps, std::optional<double> mu,
                                              const std::vector<float>* custom_sigmas) {
  const auto& c = config_;
  if (custom_sigmas) num_steps = int(custom_sigmas->size());
  if (num_steps < 1) return invalid_argument("the scheduler needs at least one step, got ", num_steps);
  if (c.use_dynamic_shifting && !mu) return invalid_argument("mu is required when use_dynamic_shifting is on");

  std::vector<float> s32;
  if (custom_sigmas) {
    s32 = *custom_sigmas;
    shift_sigmas(s32, c, mu);
  } else {
    // np.linspace(sigma_max * N, sigma_min * N, n) / N in f64: y[i] = i * step + start, the
    // endpoint set exactly.
    const double N = double(c.num_train_timesteps);
    const double start = sigma_max_ * N, stop = sigma_min_ * N;
    std::vector<double> s(static_cast<size_t>(num_steps));
    if (num_steps == 1) {
      s[0] = start;
    } else {
      const double step = (stop - start) / double(num_steps - 1);
      for (int i = 0; i < num_steps; ++i) s[size_t(i)] = double(i) * step + start;
      s.back() = stop;
    }
    for (auto& v : s) v = v / N;
    shift_sigmas(s, c, mu);
    s32.assign(s.begin(), s.end());  // torch.from_numpy(...).to(float32)
  }

  sigmas_.assign(s32.size() + 1, 0.0f);
  timesteps_.resize(s32.size());
  const float Nf = float(c.num_train_timesteps);
  for (size_t i = 0; i < s32.size(); ++i) {
    const float sf = c.invert_sigmas ? 1.0f - s32[i] : s32[i];
    sigmas_[i] = sf;
    timesteps_[i] = sf * Nf;
  }
  sigmas_.back() = c.invert_sigmas ? 1.0f : 0.0f;
  return Status::ok();
}

Status FlowMatchEulerScheduler::step(int i, const float* v, float* x, int64_t n) const {
  if (i < 0 || i >= num_steps())
    return invalid_argument("scheduler step ", i, " is outside the ", num_steps(), "-step schedule");
  const float dt = sigmas_[size_t(i) + 1] - sigmas_[size_t(i)];
  for (int64_t j = 0; j < n; ++j) {
    const float d = dt * v[j];  // two roundings: sample + dt * model_output
    x[j] = x[j] + d;
  }
  return Status::ok();
}

}  // namespace quill
