// OpenBLAS picks its kernels by the CPU's family/model number, not by its feature flags, so a CPU
// newer than the OpenBLAS build gets a generic fallback: Debian 12's OpenBLAS 0.3.21 takes an
// Emerald Rapids Xeon (family 6, model 207) for a "Prescott" and runs SSE3 kernels, 3.6x slower
// than its AVX-512 ones on the same machine. ensure_blas_core() notices that once, before the first
// BLAS call, and has OpenBLAS choose again as if OPENBLAS_CORETYPE named the core the feature flags
// support. A user's own OPENBLAS_CORETYPE is left alone; QUILL_BLAS_CORE=keep turns the check off.
#pragma once

#include <string>

#include "core/cpu_features.h"

namespace quill::cpu {

// The OpenBLAS core to switch to, or "" to keep `current`: only when `current` is one of OpenBLAS's
// pre-AVX fallbacks while the CPU has AVX2+FMA ("Haswell") or AVX-512 F/BW/DQ/VL ("SkylakeX").
std::string blas_core_upgrade(const std::string& current, const CpuFeatures& f);

// Once per process, before any BLAS call (sync_blas_threads calls it): applies blas_core_upgrade.
void ensure_blas_core();

// OpenBLAS's core in force ("" without OpenBLAS), and what ensure_blas_core did: "" (nothing),
// or "Prescott -> SkylakeX".
std::string blas_core_name();
std::string blas_core_switch();

}  // namespace quill::cpu
