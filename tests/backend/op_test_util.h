// Helpers shared by the CPU op tests: seeded random data, NaN poisoning and the list of
// instruction-set levels this machine can run (each op is checked on every one).
#pragma once

#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include "core/cpu_features.h"

namespace quill::testing_ops {

inline std::vector<float> randn(size_t n, uint32_t seed, float mean = 0.0f, float stddev = 1.0f) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> dist(mean, stddev);
  std::vector<float> v(n);
  for (auto& x : v) x = dist(rng);
  return v;
}

inline std::vector<float> nan_filled(size_t n) {
  return std::vector<float>(n, std::numeric_limits<float>::quiet_NaN());
}

inline std::vector<CpuIsa> testable_isas() {
  std::vector<CpuIsa> out;
  for (CpuIsa isa : {CpuIsa::kScalar, CpuIsa::kAvx2, CpuIsa::kAvx512})
    if (int(isa) <= int(cpu_hardware_isa())) out.push_back(isa);
  return out;
}

// Caps the ISA for the scope of a test section.
class IsaScope {
 public:
  explicit IsaScope(CpuIsa isa) { set_cpu_isa_override(isa); }
  ~IsaScope() { clear_cpu_isa_override(); }
  IsaScope(const IsaScope&) = delete;
  IsaScope& operator=(const IsaScope&) = delete;
};

}  // namespace quill::testing_ops
