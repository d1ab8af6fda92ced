// Issue 16's output reproductions through the real `quill`: a device node, a FIFO, the model's own
// files and a quantize over its input are refused with exit 1, and nothing is changed or deleted.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

#include <filesystem>
#include <fstream>
#include <iterator>

#include "io/io_test_util.h"
#include "support/cli_run.h"
#include "support/test_util.h"

namespace quill {
namespace {

namespace fs = std::filesystem;
using test::CliRun;
using test::quill_cli;
using test::slurp;

// A copy of the shipped line model in the test's temp dir, and its files' bytes before the run.
std::string copy_line_model(const testing::TempDir& dir) {
  const std::string m = dir.file("line");
  fs::copy(std::string(QUILL_SOURCE_DIR) + "/models/quill-line", m, fs::copy_options::recursive);
  return m;
}

TEST(OutputSafetyCli, DeviceNodesAndFifosAreRefusedAndKept) {
  testing::TempDir dir;
  const std::string fifo = dir.file("fifo"), node = dir.file("full");
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  const bool have_node = ::mknod(node.c_str(), S_IFCHR | 0666, makedev(1, 7)) == 0;
  for (const std::string& out : have_node ? std::vector<std::string>{fifo, node} : std::vector<std::string>{fifo}) {
    CliRun r = quill_cli("line --text Hi --steps 1 --device cpu -o '" + out + "'", dir);
    EXPECT_EQ(r.code, 1) << r.err;
    EXPECT_NE(r.err.find("refusing to write over"), std::string::npos) << r.err;
    struct stat sb {};
    ASSERT_EQ(::stat(out.c_str(), &sb), 0) << out << " was deleted";
    EXPECT_FALSE(S_ISREG(sb.st_mode)) << out << " was replaced by a regular file";
  }
  if (!have_node) std::printf("mknod not permitted: the device-node case was skipped\n");
}

TEST(OutputSafetyCli, OutputsNeverReplaceTheCommandsInputs) {
  testing::TempDir dir;
  const std::string m = copy_line_model(dir);
  for (const char* name :
       {"model.safetensors", "config.json", "sampler.json", "style_reference.png", "style_encoder/model.safetensors"}) {
    const std::string target = m + "/" + name, before = slurp(target);
    CliRun r = quill_cli("line --model '" + m + "' --text Hi --steps 1 --device cpu -o '" + target + "'", dir);
    EXPECT_EQ(r.code, 1) << name << ": " << r.err;
    EXPECT_NE(r.err.find("reads as input"), std::string::npos) << r.err;
    EXPECT_EQ(slurp(target), before) << name << " changed";
  }
  const std::string q = dir.file("q.safetensors");
  fs::copy_file(test::fixture("sd3/q128/diffusion_pytorch_model.safetensors"), q);
  const std::string before = slurp(q);
  CliRun r = quill_cli("quantize '" + q + "' '" + q + "' --type q8_0", dir);
  EXPECT_EQ(r.code, 1) << r.err;
  EXPECT_EQ(slurp(q), before);
}

TEST(OutputSafetyCli, ARewrittenPngIsReplacedWholeAndNoTempIsLeft) {
  testing::TempDir dir;
  const std::string out = dir.file("line.png");
  for (int i = 0; i < 2; ++i) {
    CliRun r =
        quill_cli("line --text Hi --steps 1 --device cpu --seed " + std::to_string(i) + " -o '" + out + "'", dir);
    ASSERT_EQ(r.code, 0) << r.err;
  }
  size_t files = 0;
  for (const auto& e : fs::directory_iterator(dir.path()))
    if (e.path().filename() != "stderr.txt") ++files;
  EXPECT_EQ(files, 1u) << "a temp file was left beside the output";
}

}  // namespace
}  // namespace quill
