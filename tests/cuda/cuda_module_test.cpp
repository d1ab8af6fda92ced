// `quill` loads the CUDA backend from libquill_cuda.so only when a GPU backend is asked for and the
// driver reports a device (runtime/gpu_module.h). Here a fake driver (fake_libcuda.c) reports one,
// so on any machine the real module is found, loaded with every symbol bound against `quill`, its
// ABI checked and its factory called; the CUDA runtime then finds no real driver behind the fake.
#include <gtest/gtest.h>

#include <dlfcn.h>

#include <cstdlib>
#include <optional>
#include <string>

#include "io/io_test_util.h"
#include "support/cli_run.h"
#include "support/scoped_env.h"

namespace quill {
namespace {

using testing::TempDir;

using test::ScopedEnv;

test::CliRun forward(const std::string& device, const TempDir& dir) {
  const std::string model = std::string(QUILL_FIXTURES_DIR) + "/sd3/tiny";
  return test::run_quill("forward --device " + device + " --model '" + model + "' --inputs '" + model +
                             "/inputs.safetensors' -o '" + dir.file("out.safetensors") + "'",
                         dir.file("stderr.txt"));
}

TEST(CudaModule, LoadedWhenTheDriverReportsADevice) {
  TempDir dir;
  ScopedEnv driver("LD_LIBRARY_PATH", QUILL_FAKE_LIBCUDA_DIR);
  const test::CliRun gpu = forward("gpu", dir);
  EXPECT_EQ(gpu.code, 1) << gpu.out << gpu.err;
  // CudaBackend::create's own words: the module ran.
  EXPECT_NE(gpu.err.find("looking for a CUDA device"), std::string::npos) << gpu.err;

  const test::CliRun cpu = forward("auto", dir);
  EXPECT_EQ(cpu.code, 0) << cpu.err;
  EXPECT_NE(cpu.out.find("device: cpu (CUDA error while looking for a CUDA device"), std::string::npos) << cpu.out;
}

TEST(CudaModule, MissingModuleSaysWhereItLooked) {
  TempDir dir;
  ScopedEnv driver("LD_LIBRARY_PATH", QUILL_FAKE_LIBCUDA_DIR);
  ScopedEnv module("QUILL_CUDA_MODULE", dir.file("libquill_cuda.so"));
  const test::CliRun gpu = forward("gpu", dir);
  EXPECT_EQ(gpu.code, 1);
  EXPECT_NE(gpu.err.find("libquill_cuda.so not found where QUILL_CUDA_MODULE says: " + dir.file("libquill_cuda.so")),
            std::string::npos)
      << gpu.err;

  const test::CliRun cpu = forward("auto", dir);
  EXPECT_EQ(cpu.code, 0) << cpu.err;
  EXPECT_NE(cpu.out.find("device: cpu (libquill_cuda.so not found"), std::string::npos) << cpu.out;
}

TEST(CudaModule, NotLoadedWithoutADriver) {
  if (void* real = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_LOCAL)) {
    dlclose(real);
    GTEST_SKIP() << "this machine has a CUDA driver";
  }
  TempDir dir;
  ScopedEnv driver("LD_LIBRARY_PATH", dir.path().string());  // no libcuda.so.1 there
  ScopedEnv module("QUILL_CUDA_MODULE", dir.file("libquill_cuda.so"));
  const test::CliRun cpu = forward("auto", dir);
  EXPECT_EQ(cpu.code, 0) << cpu.err;
  // The driver probe stopped it before the module (which is not there either).
  EXPECT_NE(cpu.out.find("device: cpu (no CUDA driver"), std::string::npos) << cpu.out;
}

}  // namespace
}  // namespace quill
