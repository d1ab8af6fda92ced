// The real `quill quantize`: dry-run plan, a written GGUF that `quill info` reads, exit codes.
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>

#include "io/io_test_util.h"
#include "io/model_files.h"
#include "support/cli_run.h"
#include "support/test_util.h"

namespace quill {
namespace {

using test::CliRun;
using test::quill_cli;

TEST(QuantizeCli, DryRunPrintsThePlanAndWritesNothing) {
  testing::TempDir dir;
  const std::string model = test::fixture("sd3/q128");
  CliRun r = quill_cli("quantize '" + model + "' --type q8_0 --dry-run", dir);
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("transformer_blocks.0.attn.to_q.weight"), std::string::npos);
  EXPECT_NE(r.out.find("transformer-block linear"), std::string::npos);
  EXPECT_NE(r.out.find("embedding / final projection: bf16"), std::string::npos);
  EXPECT_NE(r.out.find("plan: "), std::string::npos);
  EXPECT_NE(r.out.find("x smaller"), std::string::npos);
}

TEST(QuantizeCli, WritesGgufThatInfoReads) {
  testing::TempDir dir;
  const std::string out = dir.file("t.gguf");
  CliRun r = quill_cli("quantize '" + test::fixture("sd3/q128") + "' '" + out + "' --type tq2_0_g128 --json", dir);
  ASSERT_EQ(r.code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["type"], "tq2_0_g128");
  EXPECT_GT(j["bytes_in"].get<int64_t>(), 3 * j["bytes_out"].get<int64_t>());
  EXPECT_GT(j["rel_error"].get<double>(), 0.1);
  EXPECT_GT(j["histogram"]["tq2_0_g128"].get<int>(), 20);
  r = quill_cli("info '" + out + "' --json", dir);
  ASSERT_EQ(r.code, 0) << r.err;
  const auto info = nlohmann::json::parse(r.out);
  EXPECT_EQ(info["format"], "gguf");
  EXPECT_NE(info.dump().find("SD3Transformer2DModel"), std::string::npos);
}

TEST(QuantizeCli, ExitCodesAndMessages) {
  testing::TempDir dir;
  const std::string model = test::fixture("sd3/q128");
  struct Case {
    std::string args;
    int code;
    std::string phrase;
  };
  const Case cases[] = {
      {"quantize '" + model + "' --type q4_k --dry-run", 2, "unknown weight type 'q4_k'"},
      {"quantize '" + model + "' --rules 'x' --dry-run", 2, "is not REGEX=TYPE"},
      {"quantize '" + model + "'", 2, "OUT.gguf is required"},
      {"quantize /nonexistent/model out.gguf", 2, "/nonexistent/model"},
      {"quantize '" + model + "' /nonexistent/dir/out.gguf", 1, "/nonexistent/dir/out.gguf"},
  };
  for (const Case& c : cases) {
    CliRun r = quill_cli(c.args, dir);
    EXPECT_EQ(r.code, c.code) << c.args << "\n" << r.err;
    EXPECT_NE(r.err.find(c.phrase), std::string::npos) << c.args << "\n" << r.err;
  }
}

}  // namespace
}  // namespace quill
