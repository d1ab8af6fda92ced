// Whether the AMX tile kernels (quant_kernels_amx.cpp) may run. Kept out of that file on purpose:
// it is built with the AVX-512 and AMX flags, so the compiler may use those instructions in any
// function there, and these run on every CPU, before dispatch has chosen anything (an ASan build
// put AVX-512 stores into wanted() and faulted on AVX2 machines).
#include <sys/syscall.h>
#include <unistd.h>

#include <cstdlib>
#include <string_view>

#include "core/cpu_features.h"
#include "quant/quant_kernels.h"

namespace quill::quant::detail::amx {

namespace {
// Linux: a process must ask for the AMX tile data state before its first tile instruction.
constexpr long kArchReqXcompPerm = 0x1023;
constexpr long kXfeatureXtiledata = 18;

bool os_permits_amx() {
  static const bool ok = syscall(SYS_arch_prctl, kArchReqXcompPerm, kXfeatureXtiledata) == 0;
  return ok;
}
}  // namespace

bool wanted() {
  static const bool allowed = [] {
    const char* v = std::getenv("QUILL_AMX");
    return !(v && (std::string_view(v) == "0" || std::string_view(v) == "off"));
  }();
  return allowed;
}

bool supported() {
  const CpuFeatures& f = cpu_features();
  if (!(f.amx_tile && f.amx_int8 && f.avx512f && f.avx512bw)) return false;
  return os_permits_amx();
}

bool supported_exact() {
  const CpuFeatures& f = cpu_features();
  return supported() && f.amx_bf16 && f.avx512bf16;
}

}  // namespace quill::quant::detail::amx
