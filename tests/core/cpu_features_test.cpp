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

}  // namespace
}  // namespace quill
