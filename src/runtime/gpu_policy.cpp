#include "runtime/gpu_policy.h"

#include <cctype>
#include <cstdlib>

#include "core/log.h"

namespace quill {

namespace {

std::string lower_trimmed(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  std::string out(s);
  for (char& c : out) c = char(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

}  // namespace

bool parse_toggle(const char* value, bool unset) {
  if (!value) return unset;
  const std::string v = lower_trimmed(value);
  return !(v == "0" || v == "off" || v == "false" || v == "no");
}

GpuPolicy GpuPolicy::parse(FunctionRef<const char*(const char*)> getenv_fn) {
  GpuPolicy p;
  p.gpu = parse_toggle(getenv_fn("QUILL_GPU"), true);
  p.attention = parse_toggle(getenv_fn("QUILL_GPU_ATTN"), true);
  p.ternary = parse_toggle(getenv_fn("QUILL_GPU_TERNARY"), true);
  p.cuda_graphs = parse_toggle(getenv_fn("QUILL_CUDA_GRAPHS"), true);
  if (const char* f = getenv_fn("QUILL_FAULT_INJECT")) {
    std::string_view rest(f);
    while (!rest.empty()) {
      const size_t comma = rest.find(',');
      const std::string name = lower_trimmed(rest.substr(0, comma));
      rest = comma == std::string_view::npos ? std::string_view() : rest.substr(comma + 1);
      if (name.empty()) continue;
      bool known = false;
      for (size_t k = 0; k < size_t(OpKind::kCount); ++k) {
        if (name == "all" || name == op_kind_name(OpKind(k))) {
          p.fault_inject[k] = true;
          known = true;
        }
      }
      if (!known) p.unknown_fault_names.push_back(name);
    }
  }
  return p;
}

GpuPolicy GpuPolicy::from_environment() {
  return parse([](const char* name) -> const char* { return std::getenv(name); });
}

bool GpuPolicy::allows(OpKind kind, const Tensor* weight) const {
  if (!gpu) return false;
  if (kind == OpKind::kAttention && !attention) return false;
  if (kind == OpKind::kLinear && weight && weight->dtype() == DType::kTQ2_0_G128 && !ternary) return false;
  return true;
}

std::string GpuPolicy::to_string() const {
  auto on = [](bool b) { return b ? "on" : "off"; };
  std::string faults;
  for (size_t k = 0; k < fault_inject.size(); ++k)
    if (fault_inject[k]) faults += str_cat(faults.empty() ? "" : ",", op_kind_name(OpKind(k)));
  return str_cat("gpu=", on(gpu), " attn=", on(attention), " ternary=", on(ternary), " graphs=", on(cuda_graphs),
                 " fault_inject=", faults.empty() ? "none" : faults);
}

const GpuPolicy& gpu_policy() {
  static const GpuPolicy policy = [] {
    GpuPolicy p = GpuPolicy::from_environment();
    for (const auto& n : p.unknown_fault_names)
      log_warn("QUILL_FAULT_INJECT: '", n, "' names no op kind (linear, attention, layer_norm, rms_norm, ",
               "activation, residual or all); ignored");
    const GpuPolicy defaults;
    if (p.to_string() != defaults.to_string()) log_info("GPU policy from the environment: ", p.to_string());
    return p;
  }();
  return policy;
}

}  // namespace quill
