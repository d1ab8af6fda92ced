#include "core/cpu_features.h"

#include <gtest/gtest.h>

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

// The emulation test build (scripts/test-avx512-emulated.sh) is only worth running if the suite
// then dispatches to the AVX-512 kernels, and only on hardware with AVX2 (what the emulation uses).
TEST(CpuFeatures, EmulatedBuildDispatchesToAvx512) {
  if (!cpu_avx512_emulated()) GTEST_SKIP() << "not the AVX-512 emulation build";
  ASSERT_EQ(isa_for_features(cpu_features()), CpuIsa::kAvx2) << "the emulation runs on AVX2 hardware only";
  EXPECT_EQ(cpu_hardware_isa(), CpuIsa::kAvx512);
  EXPECT_NE(cpu_features_string().find("avx512 emulated"), std::string::npos);
  EXPECT_FALSE(cpu_features().avx512f) << "cpu_features() must stay the hardware's (OpenBLAS's core reads it)";
}

}  // namespace
}  // namespace quill
