#include "core/cpu_features.h"

#include <gtest/gtest.h>

#include <fstream>
#include <string>

namespace quill {
namespace {

CpuFeatures avx512_skylake() {  // AVX-512 F/BW/VL/DQ without VNNI or BF16
  CpuFeatures f;
  f.avx2 = f.fma = f.f16c = true;
  f.avx512f = f.avx512bw = f.avx512vl = f.avx512dq = true;
  return f;
}

// The AVX-512 kernels are compiled with VNNI and BF16, so a CPU needs both to run them.
TEST(CpuFeatures, Avx512KernelsNeedVnniAndBf16) {
  CpuFeatures f = avx512_skylake();
  EXPECT_EQ(isa_for_features(f), CpuIsa::kAvx2);
  f.avx512vnni = true;  // Cascade Lake: VNNI, no BF16
  EXPECT_EQ(isa_for_features(f), CpuIsa::kAvx2);
  f.avx512bf16 = true;  // Cooper Lake, Sapphire Rapids, Zen 4
  EXPECT_EQ(isa_for_features(f), CpuIsa::kAvx512);
  f.fma = false;
  EXPECT_EQ(isa_for_features(f), CpuIsa::kScalar);
  EXPECT_EQ(isa_for_features(CpuFeatures{}), CpuIsa::kScalar);
}

// Whether /proc/cpuinfo lists `flag` for this machine (the kernel's own reading of CPUID).
bool cpuinfo_flag(const std::string& flag) {
  std::ifstream f("/proc/cpuinfo");
  for (std::string line; std::getline(f, line);)
    if (line.rfind("flags", 0) == 0) return (line + " ").find(" " + flag + " ") != std::string::npos;
  return false;
}

// The emulation test build (scripts/test-avx512-emulated.sh) is only worth running if the suite
// then dispatches to the AVX-512 kernels. cpu_features() must stay the hardware's (OpenBLAS's core
// choice and AMX read it): AVX2-only on the machines the emulation is for, AVX-512 where
// QUILL_EMULATE_ANYWAY=1 runs it on an AVX-512 machine.
TEST(CpuFeatures, EmulatedBuildDispatchesToAvx512) {
  if (!cpu_avx512_emulated()) GTEST_SKIP() << "not the AVX-512 emulation build";
  EXPECT_EQ(cpu_hardware_isa(), CpuIsa::kAvx512);
  EXPECT_NE(cpu_features_string().find("avx512 emulated"), std::string::npos);
  ASSERT_TRUE(cpuinfo_flag("avx2")) << "the emulation runs on AVX2 hardware";
  EXPECT_EQ(cpu_features().avx512f, cpuinfo_flag("avx512f")) << "cpu_features() must stay the hardware's";
  EXPECT_EQ(cpu_features().avx512bf16, cpuinfo_flag("avx512_bf16")) << "cpu_features() must stay the hardware's";
}

}  // namespace
}  // namespace quill
