#include "backend/cpu/blas_core.h"

#include <array>
#include <cstdlib>
#include <mutex>

#if defined(QUILL_HAVE_OPENBLAS)
#include <cblas.h>
#include <dlfcn.h>
#endif

#include "core/log.h"

namespace quill::cpu {

namespace {
std::string g_switch;  // written once under call_once
}  // namespace

std::string blas_core_upgrade(const std::string& current, const CpuFeatures& f) {
  // OpenBLAS's names for cores older than AVX (its get_coretype() fallbacks for unknown models).
  static constexpr std::array<const char*, 14> kOld = {"Prescott", "Core2",   "Penryn",    "Dunnington", "Nehalem",
                                                       "Atom",     "Katmai",  "Coppermine", "Northwood",  "Banias",
                                                       "Opteron",  "Barcelona", "Unknown",  "Generic"};
  bool old = false;
  for (const char* name : kOld) old = old || current == name;
  if (!old) return "";
  if (f.avx512f && f.avx512bw && f.avx512dq && f.avx512vl) return "SkylakeX";
  if (f.avx2 && f.fma) return "Haswell";
  return "";
}

std::string blas_core_name() {
#if defined(QUILL_HAVE_OPENBLAS)
  const char* name = openblas_get_corename();
  return name ? name : "";
#else
  return "";
#endif
}

std::string blas_core_switch() {
  ensure_blas_core();
  return g_switch;
}

void ensure_blas_core() {
#if defined(QUILL_HAVE_OPENBLAS)
  static std::once_flag once;
  std::call_once(once, [] {
    const char* keep = std::getenv("QUILL_BLAS_CORE");
    if (std::getenv("OPENBLAS_CORETYPE") || (keep && std::string(keep) == "keep")) return;
    const std::string before = blas_core_name();
    const std::string target = blas_core_upgrade(before, cpu_features());
    if (target.empty()) return;
    // OpenBLAS's own start-up choice, run again: gotoblas_dynamic_init() reads OPENBLAS_CORETYPE and
    // does nothing while a core is set, so quit first. Both exist only in DYNAMIC_ARCH builds (as
    // Debian's), hence dlsym rather than a link-time reference.
    using Fn = void (*)();
    auto quit = reinterpret_cast<Fn>(dlsym(RTLD_DEFAULT, "gotoblas_dynamic_quit"));
    auto init = reinterpret_cast<Fn>(dlsym(RTLD_DEFAULT, "gotoblas_dynamic_init"));
    if (!quit || !init) {
      log_warn("OpenBLAS chose its ", before, " kernels for this CPU and cannot be told otherwise here (not a "
               "DYNAMIC_ARCH build); set OPENBLAS_CORETYPE=", target, " for faster f32 GEMMs");
      return;
    }
    setenv("OPENBLAS_CORETYPE", target.c_str(), 1);
    quit();
    init();
    unsetenv("OPENBLAS_CORETYPE");
    const std::string after = blas_core_name();
    g_switch = before + " -> " + after;
    log_info("OpenBLAS took this CPU for a ", before, " (a model it does not know); its kernels are now ", after,
             "'s (QUILL_BLAS_CORE=keep keeps ", before, ")");
  });
#endif
}

}  // namespace quill::cpu
