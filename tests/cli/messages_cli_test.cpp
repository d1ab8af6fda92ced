// Issue 16's "silent or unclear" reproductions: each case says what is wrong, in the user's terms,
// with the exit-code rule (2 = the caller's arguments or input files are invalid, 1 = the run
// failed) — and a run that succeeds with a caveat says so on stderr.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "io/io_test_util.h"
#include "support/cli_run.h"
#include "support/test_util.h"

namespace quill {
namespace {

namespace fs = std::filesystem;
using test::CliRun;
using test::quill_cli;

const std::string kLineModel = std::string(QUILL_SOURCE_DIR) + "/models/quill-line";

// A copy of the default line model with `drop` (a file or folder name) removed.
std::string line_model_without(const testing::TempDir& dir, const std::string& drop) {
  const std::string m = dir.file("line-" + drop);
  fs::copy(kLineModel, m, fs::copy_options::recursive);
  fs::remove_all(m + "/" + drop);
  return m;
}

CliRun line(const std::string& args, const testing::TempDir& dir) {
  return quill_cli("line --steps 1 --device cpu " + args, dir);
}

TEST(MessagesCli, MissingGlyphsAreWarnedAboutInQuillLine) {
  testing::TempDir dir;
  // "漢 Hi": DejaVu Sans has no CJK.
  CliRun r = line("--text \"$(printf '\\346\\274\\242 Hi')\" -o '" + dir.file("l.png") + "'", dir);
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.err.find("warning: the glyph font has no glyph for U+6F22"), std::string::npos) << r.err;
  EXPECT_TRUE(fs::exists(dir.file("l.png")));

  // In a batch the warning names the file's line number.
  std::ofstream(dir.file("b.txt")) << "Hi\n\nA \xe6\xbc\xa2\n";
  r = line("--batch-file '" + dir.file("b.txt") + "' -o '" + dir.file("b.png") + "'", dir);
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.err.find("warning: line 3: the glyph font has no glyph for U+6F22"), std::string::npos) << r.err;

  CliRun clean = line("--text Hi -o '" + dir.file("c.png") + "'", dir);
  ASSERT_EQ(clean.code, 0) << clean.err;
  EXPECT_EQ(clean.err.find("warning"), std::string::npos) << clean.err;
}

TEST(MessagesCli, LineModelWithoutConfigSaysSo) {
  testing::TempDir dir;
  const std::string m = line_model_without(dir, "config.json");
  CliRun r = line("--model '" + m + "' --text Hi -o '" + dir.file("l.png") + "'", dir);
  EXPECT_EQ(r.code, 2) << r.err;
  EXPECT_NE(r.err.find("has no config.json"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("shape mismatch"), std::string::npos) << r.err;
}

TEST(MessagesCli, GgufWithBadMagicIsNotCalledSafetensors) {
  testing::TempDir dir;
  testing::write_bytes(dir.file("bad.gguf"), std::string("XXXX\x03\0\0\0garbage garbage garbage", 28));
  CliRun r = quill_cli("info '" + dir.file("bad.gguf") + "'", dir);
  EXPECT_EQ(r.code, 2) << r.err;
  EXPECT_NE(r.err.find("not a GGUF file: wrong magic (expected \"GGUF\", found \"XXXX\")"), std::string::npos)
      << r.err;
  EXPECT_EQ(r.err.find("safetensors"), std::string::npos) << r.err;
}

TEST(MessagesCli, EmptyTextAndDirectoryBatchSayWhatIsWrong) {
  testing::TempDir dir;
  CliRun r = line("--text '' -o '" + dir.file("l.png") + "'", dir);
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("--text (a non-empty line)"), std::string::npos) << r.err;
  fs::create_directory(dir.file("lines"));
  r = line("--batch-file '" + dir.file("lines") + "' -o '" + dir.file("l.png") + "'", dir);
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("is a directory"), std::string::npos) << r.err;
}

TEST(MessagesCli, ModelWithoutStyleEncoderRunsUnconditionalUnlessAStyleIsAskedFor) {
  testing::TempDir dir;
  const std::string m = line_model_without(dir, "style_encoder");
  CliRun r = line("--model '" + m + "' --text Hi -o '" + dir.file("l.png") + "'", dir);
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.err.find("style"), std::string::npos) << r.err;  // nothing about a --style nobody passed
  EXPECT_NE(r.out.find("style none (unconditional)"), std::string::npos) << r.out;

  r = line("--model '" + m + "' --text Hi --style '" + kLineModel + "/style_reference.png' -o '" +
               dir.file("s.png") + "'",
           dir);
  EXPECT_EQ(r.code, 2) << r.err;
  EXPECT_NE(r.err.find("has no style encoder"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(dir.file("s.png")));
}

TEST(MessagesCli, SamplerJsonSyntaxErrorSaysWhere) {
  testing::TempDir dir;
  const std::string m = line_model_without(dir, "sampler.json");
  std::ofstream(m + "/sampler.json") << "{\n  \"steps\": 4,\n  \"shift\" 2\n}\n";
  CliRun r = line("--model '" + m + "' --text Hi -o '" + dir.file("l.png") + "'", dir);
  EXPECT_EQ(r.code, 2) << r.err;
  EXPECT_NE(r.err.find("sampler.json"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("line 3"), std::string::npos) << r.err;
}

TEST(MessagesCli, DualAttentionLayerBeyondTheModelIsRefused) {
  testing::TempDir dir;
  const std::string m = dir.file("transformer");
  fs::copy(test::fixture("pipeline/transformer"), m, fs::copy_options::recursive);
  std::string cfg = test::slurp(m + "/config.json");
  const std::string from = "\"dual_attention_layers\": []";
  ASSERT_NE(cfg.find(from), std::string::npos);
  cfg.replace(cfg.find(from), from.size(), "\"dual_attention_layers\": [99]");
  fs::remove(m + "/config.json");
  std::ofstream(m + "/config.json") << cfg;
  CliRun r = quill_cli("generate --model '" + m + "' --vae '" + test::fixture("pipeline/vae") + "' --cond '" +
                           test::fixture("pipeline/cfg5/cond.safetensors") +
                           "' --cfg 1 --steps 1 --width 16 --height 16 --device cpu -o '" + dir.file("g.png") + "'",
                       dir);
  EXPECT_EQ(r.code, 2) << r.err;
  EXPECT_NE(r.err.find("'dual_attention_layers' names layer 99"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("num_layers 2"), std::string::npos) << r.err;
}

TEST(MessagesCli, TooWideLineIsAUsageErrorLikeOtherTextErrors) {
  testing::TempDir dir;
  const std::string wide(400, 'M');
  CliRun r = line("--text '" + wide + "' -o '" + dir.file("l.png") + "'", dir);
  EXPECT_EQ(r.code, 2) << r.err;
  EXPECT_NE(r.err.find("max line width"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("--overflow clamp"), std::string::npos) << r.err;
  r = line("--text \"$(printf 'a\\tb')\" -o '" + dir.file("l.png") + "'", dir);
  EXPECT_EQ(r.code, 2) << r.err;
  EXPECT_FALSE(fs::exists(dir.file("l.png")));
}

}  // namespace
}  // namespace quill
