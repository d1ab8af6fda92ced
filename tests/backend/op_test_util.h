// The instruction-set levels this machine can run, for the CPU op tests (each op is checked on
// every one). Random data and NaN poisoning are in support/test_util.h.
#pragma once

#include <vector>

#include "backend/cpu/kernel_table.h"
#include "core/cpu_features.h"
#include "support/test_util.h"

namespace quill::testing_ops {

inline std::vector<CpuIsa> testable_isas() {
  std::vector<CpuIsa> out;
  for (CpuIsa isa : {CpuIsa::kScalar, CpuIsa::kAvx2, CpuIsa::kAvx512})
    if (int(isa) <= int(cpu_hardware_isa())) out.push_back(isa);
  return out;
}

// The CPU ops run with the kernels of `isa` (or of `table`) for the scope of a test section.
class IsaScope {
 public:
  explicit IsaScope(const cpu::KernelTable& table) { cpu::set_kernel_table_override(&table); }
  explicit IsaScope(CpuIsa isa) : IsaScope(cpu::kernel_table_for(isa)) {}
  ~IsaScope() { cpu::set_kernel_table_override(nullptr); }
  IsaScope(const IsaScope&) = delete;
  IsaScope& operator=(const IsaScope&) = delete;
};

}  // namespace quill::testing_ops
