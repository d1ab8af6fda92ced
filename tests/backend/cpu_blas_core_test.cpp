// OpenBLAS's core choice (backend/cpu/blas_core.h): a pre-AVX fallback on a CPU with AVX2 or
// AVX-512 is replaced by the core its feature flags support; a core OpenBLAS recognised is kept.
#include <gtest/gtest.h>

#include <cstdlib>
#include <vector>

#include "backend/cpu/blas_core.h"
#include "backend/cpu/gemm.h"

namespace quill::cpu {
namespace {

CpuFeatures avx512() {
  CpuFeatures f;
  f.avx2 = f.fma = f.f16c = true;
  f.avx512f = f.avx512bw = f.avx512vl = f.avx512dq = true;
  return f;
}

TEST(BlasCore, FallbackCoresAreUpgradedByFeatures) {
  CpuFeatures avx2;
  avx2.avx2 = avx2.fma = true;
  EXPECT_EQ(blas_core_upgrade("Prescott", avx512()), "SkylakeX");
  EXPECT_EQ(blas_core_upgrade("Nehalem", avx512()), "SkylakeX");
  EXPECT_EQ(blas_core_upgrade("Core2", avx2), "Haswell");
  EXPECT_EQ(blas_core_upgrade("Prescott", CpuFeatures{}), "");  // an SSE-only CPU keeps it
}

TEST(BlasCore, RecognisedCoresAreKept) {
  for (const char* core : {"SkylakeX", "Cooperlake", "SapphireRapids", "Haswell", "Zen", "SandyBridge"})
    EXPECT_EQ(blas_core_upgrade(core, avx512()), "") << core;
}

// On this machine: after the engine's first GEMM, OpenBLAS's core is not a fallback the CPU's
// features could beat (unless the user pinned one with OPENBLAS_CORETYPE).
TEST(BlasCore, TheEnginesCoreMatchesTheCpu) {
  if (!have_blas()) GTEST_SKIP() << "built without OpenBLAS";
  ThreadPool pool(1);
  std::vector<float> a(4, 1.0f), b(4, 1.0f), c(1, 0.0f);
  sgemm_nt(1, 1, 4, a.data(), 4, b.data(), 4, c.data(), 1, false, pool);
  EXPECT_EQ(c[0], 4.0f);
  if (std::getenv("OPENBLAS_CORETYPE")) GTEST_SKIP() << "OPENBLAS_CORETYPE is set";
  const std::string core = blas_core_name();
  EXPECT_EQ(blas_core_upgrade(core, cpu_features()), "") << "OpenBLAS runs its " << core << " kernels on a CPU with "
                                                         << cpu_features_string();
  std::printf("[ blas ] core %s%s\n", core.c_str(), blas_core_switch().empty() ? "" : (" (" + blas_core_switch() + ")").c_str());
}

}  // namespace
}  // namespace quill::cpu
