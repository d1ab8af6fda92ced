// `--device` and `--diag` on the commands that run models: the op counts cover every model of the
// command (line model with its RoPE, style encoder, transformer, VAE), and asking for a GPU where
// there is none is a runtime error (exit 1) naming why, never a silent CPU run.
#include <gtest/gtest.h>

#include "io/io_test_util.h"
#include "runtime/gpu_backend.h"
#include "support/cli_run.h"
#include "support/test_util.h"

namespace quill {
namespace {

using test::CliRun;
using test::quill_cli;

TEST(DeviceDiagCli, LineDiagCountsLineModelRopeAndStyleEncoderOps) {
  testing::TempDir dir;
  CliRun r = quill_cli("line --text Hej --steps 2 --device cpu --diag -o '" + dir.file("l.png") + "'", dir);
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("device cpu"), std::string::npos) << r.out;
  const auto style = r.out.find("style encoder ops:");
  ASSERT_NE(style, std::string::npos) << r.out;
  const std::string line_part = r.out.substr(0, style), style_part = r.out.substr(style);
  EXPECT_NE(line_part.find("rope: cpu="), std::string::npos) << r.out;
  EXPECT_NE(line_part.find("linear: cpu="), std::string::npos) << r.out;
  EXPECT_NE(style_part.find("gelu_erf: cpu="), std::string::npos) << r.out;
  EXPECT_NE(style_part.find("attention: cpu="), std::string::npos) << r.out;
}

TEST(DeviceDiagCli, GenerateDiagCountsVaeOps) {
  testing::TempDir dir;
  CliRun r =
      quill_cli("generate --model '" + test::fixture("pipeline/transformer") + "' --vae '" +
                    test::fixture("pipeline/vae") + "' --cond '" + test::fixture("pipeline/cfg5/cond.safetensors") +
                    "' --cfg 1 --steps 2 --width 16 --height 16 --device cpu --diag -o '" + dir.file("g.png") + "'",
                dir);
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("conv2d: cpu="), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("group_norm: cpu="), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("upsample: cpu="), std::string::npos) << r.out;
}

TEST(DeviceDiagCli, GpuRequiredWithoutOneIsARuntimeError) {
  if (create_gpu_backend().is_ok()) GTEST_SKIP() << "this machine has a GPU";
  testing::TempDir dir;
  for (const std::string& cmd :
       {"line --text Hej --device gpu -o '" + dir.file("l.png") + "'",
        "generate --model '" + test::fixture("pipeline/transformer") + "' --vae '" + test::fixture("pipeline/vae") +
            "' --cond '" + test::fixture("pipeline/cfg5/cond.safetensors") +
            "' --cfg 1 --steps 1 --width 16 --height 16 --device gpu -o '" + dir.file("g.png") + "'"}) {
    CliRun r = quill_cli(cmd, dir);
    EXPECT_EQ(r.code, 1) << cmd << "\n" << r.err;
    EXPECT_NE(r.err.find("--device gpu"), std::string::npos) << r.err;
  }
  CliRun bad = quill_cli("line --text Hej --device tpu -o '" + dir.file("l.png") + "'", dir);
  EXPECT_EQ(bad.code, 2) << bad.err;
}

}  // namespace
}  // namespace quill
