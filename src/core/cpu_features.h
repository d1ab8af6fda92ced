// CPU feature detection for run-time kernel dispatch. QUILL_CPU_ISA=scalar|avx2|avx512 caps the
// level (never raises it beyond what the CPU has), for A/B checks. The kernels of each level are
// chosen once, in backend/cpu/kernel_table.cpp (where tests also get the other levels' kernels).
#pragma once

#include <string>

namespace quill {

enum class CpuIsa { kScalar = 0, kAvx2 = 1, kAvx512 = 2 };

struct CpuFeatures {
  bool avx2 = false, fma = false, f16c = false;
  bool avx512f = false, avx512bw = false, avx512vl = false, avx512dq = false;
  bool avx512vnni = false, avx512bf16 = false, avx_vnni = false;
  bool amx_tile = false, amx_bf16 = false, amx_int8 = false;
};

const CpuFeatures& cpu_features();  // what the hardware and OS support
// The level a feature set supports. kAvx512 needs VNNI and BF16 too: every *_avx512.cpp is compiled
// with -mavx512vnni -mavx512bf16, so the compiler may use them anywhere in those files (an
// AVX-512 CPU without them, e.g. Skylake-X, runs the AVX2 kernels instead of faulting).
CpuIsa isa_for_features(const CpuFeatures& f);
CpuIsa cpu_hardware_isa();          // best level the hardware supports (or, emulated, AVX-512)
// True in the test build that runs the AVX-512 kernels on AVX2 through SIMDe (QUILL_EMULATE_AVX512,
// core/avx512_intrinsics.h): there cpu_hardware_isa() is kAvx512 on AVX2 hardware.
bool cpu_avx512_emulated();
CpuIsa cpu_isa();                   // level in force (hardware capped by QUILL_CPU_ISA)
const char* cpu_isa_name(CpuIsa isa);
std::string cpu_features_string();

}  // namespace quill
