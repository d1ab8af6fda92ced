// Issue 16's number reproductions: NaN / Inf / out-of-range options are usage errors (exit 2),
// seeds take the full unsigned 64-bit range and nothing else, non-finite input tensors and a
// rope_theta of 0 are clear errors, and no command exits 0 with a non-finite output.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <limits>

#include "io/io_test_util.h"
#include "io/safetensors.h"
#include "support/cli_run.h"
#include "support/test_util.h"

namespace quill {
namespace {

namespace fs = std::filesystem;
using test::CliRun;
using test::quill_cli;

TEST(FiniteNumbersCli, NonFiniteOrOutOfRangeOptionsAreUsageErrors) {
  testing::TempDir dir;
  const std::string out = " -o '" + dir.file("l.png") + "'";
  for (const std::string bad : {"--cfg nan", "--cfg inf", "--shift nan", "--shift -inf", "--start-sigma nan",
                                "--seed -1", "--seed 18446744073709551616", "--seed 1e23", "--seed 0x10"}) {
    CliRun r = quill_cli("line --text Hi --steps 1 " + bad + out, dir);
    EXPECT_EQ(r.code, 2) << bad << ": " << r.err;
    EXPECT_FALSE(fs::exists(dir.file("l.png"))) << bad;
  }
  CliRun ok = quill_cli("line --text Hi --steps 1 --device cpu --seed 18446744073709551615" + out, dir);
  EXPECT_EQ(ok.code, 0) << ok.err;
  CliRun gen = quill_cli("generate --model m --vae v --cond c --width 16 --height 16 --shift nan -o x.png", dir);
  EXPECT_EQ(gen.code, 2) << gen.err;
}

TEST(FiniteNumbersCli, NonFiniteConditioningAndForwardInputsAreRefused) {
  testing::TempDir dir;
  auto f = SafetensorsFile::open(test::fixture("pipeline/cfg5/cond.safetensors")).value();
  std::vector<float> e = f->tensor("encoder_hidden_states").value().to_f32_vector();
  std::vector<float> p = f->tensor("pooled_projections").value().to_f32_vector();
  const Shape es = f->tensor("encoder_hidden_states").value().shape(),
              ps = f->tensor("pooled_projections").value().shape();
  e[3] = std::numeric_limits<float>::quiet_NaN();
  const std::string cond = dir.file("nan_cond.safetensors");
  ASSERT_TRUE(write_safetensors(cond, {{"encoder_hidden_states", Tensor(e.data(), DType::kF32, es)},
                                       {"pooled_projections", Tensor(p.data(), DType::kF32, ps)}})
                  .is_ok());
  CliRun r = quill_cli("generate --model '" + test::fixture("pipeline/transformer") + "' --vae '" +
                           test::fixture("pipeline/vae") + "' --cond '" + cond +
                           "' --cfg 1 --steps 1 --width 16 --height 16 --device cpu -o '" + dir.file("g.png") + "'",
                       dir);
  EXPECT_EQ(r.code, 2) << r.err;
  EXPECT_NE(r.err.find("non-finite"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(dir.file("g.png")));

  auto in = SafetensorsFile::open(test::fixture("sd3/tiny/inputs.safetensors")).value();
  std::vector<std::pair<std::string, Tensor>> tensors;
  std::vector<std::vector<float>> keep;
  for (const auto& t : in->tensors()) {
    keep.push_back(in->tensor(t.name).value().to_f32_vector());
    if (t.name == "hidden_states") keep.back()[0] = std::numeric_limits<float>::infinity();
    tensors.push_back({t.name, Tensor(keep.back().data(), DType::kF32, in->tensor(t.name).value().shape())});
  }
  const std::string inputs = dir.file("inf_inputs.safetensors");
  ASSERT_TRUE(write_safetensors(inputs, tensors).is_ok());
  CliRun fw = quill_cli("forward --model '" + test::fixture("sd3/tiny") + "' --inputs '" + inputs + "' -o '" +
                            dir.file("o.safetensors") + "'",
                        dir);
  EXPECT_EQ(fw.code, 2) << fw.err;
  EXPECT_NE(fw.err.find("hidden_states"), std::string::npos) << fw.err;
  EXPECT_FALSE(fs::exists(dir.file("o.safetensors")));
}

TEST(FiniteNumbersCli, RopeThetaZeroIsRejectedAtLoad) {
  testing::TempDir dir;
  const std::string m = dir.file("line");
  fs::copy(std::string(QUILL_SOURCE_DIR) + "/models/quill-line", m, fs::copy_options::recursive);
  std::string cfg;
  {
    std::ifstream f(m + "/config.json");
    cfg.assign(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
  }
  const auto key = cfg.find("\"rope_theta\"");
  ASSERT_NE(key, std::string::npos);
  const auto colon = cfg.find(':', key), comma = cfg.find_first_of(",}", colon);
  cfg = cfg.substr(0, colon + 1) + " 0" + cfg.substr(comma);
  fs::remove(m + "/config.json");
  std::ofstream(m + "/config.json") << cfg;
  CliRun r = quill_cli("line --model '" + m + "' --text Hi --steps 1 --device cpu -o '" + dir.file("l.png") + "'", dir);
  EXPECT_EQ(r.code, 2) << r.err;  // an invalid input file: the caller's error
  EXPECT_NE(r.err.find("rope_theta"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(dir.file("l.png")));
}

}  // namespace
}  // namespace quill
