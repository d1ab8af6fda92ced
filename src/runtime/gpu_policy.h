// Which ops may run on the accelerator, from environment toggles read once per process:
//   QUILL_GPU=0          no GPU ops at all (the engine behaves as a CPU-only build)
//   QUILL_GPU_ATTN=0     attention stays on the CPU
//   QUILL_GPU_TERNARY=0  linears with ternary (tq2_0_g128) weights stay on the CPU
//   QUILL_CUDA_GRAPHS=0  no CUDA graph capture / replay (eager launches only)
//   QUILL_FAULT_INJECT=linear,attention   the primary backend "fails" these op kinds on purpose,
//                        so the CPU fallback path can be exercised on a real machine ("all" = every kind)
// A toggle is off for "0", "off", "false" or "no" (any case); anything else, or unset, is on.
// The Dispatcher consults the policy before the primary backend, so it applies to any backend.
#pragma once

#include <array>
#include <string>
#include <vector>

#include "core/function_ref.h"
#include "runtime/op_backend.h"

namespace quill {

struct GpuPolicy {
  bool gpu = true;
  bool attention = true;
  bool ternary = true;
  bool cuda_graphs = true;
  std::array<bool, size_t(OpKind::kCount)> fault_inject{};
  std::vector<std::string> unknown_fault_names;  // QUILL_FAULT_INJECT entries that name no op kind

  // Parse from a getenv-like lookup (returns null for unset), so tests need not touch the environment.
  static GpuPolicy parse(FunctionRef<const char*(const char*)> getenv_fn);
  static GpuPolicy from_environment();

  // May the primary backend be asked to run this op (weight: the linear's weight, else null)?
  bool allows(OpKind kind, const Tensor* weight) const;
  bool fault_injected(OpKind kind) const { return fault_inject[size_t(kind)]; }
  std::string to_string() const;  // "gpu=on attn=on ternary=on graphs=on fault_inject=linear"
};

// The process-wide policy, read from the environment on first use (and logged once at info level
// when it differs from the defaults or names unknown fault kinds).
const GpuPolicy& gpu_policy();

// A toggle value: false for 0/off/false/no; true for anything else; `unset` when null.
bool parse_toggle(const char* value, bool unset);

}  // namespace quill
