// Quantized line-model variants are used only where variants.json says they passed their quality gate,
// for exactly the model.safetensors they were measured on; every refusal says why and what to do.
#include "api/line_variants.h"

#include <gtest/gtest.h>

#include <cinttypes>
#include <cstdio>
#include <filesystem>
#include <fstream>

#include "io/io_test_util.h"
#include "quill/line_studio.h"
#include "support/test_util.h"

namespace quill {
namespace {

namespace fs = std::filesystem;

std::string model_copy(const testing::TempDir& tmp) {
  const fs::path dir = tmp.path() / "model";
  fs::create_directories(dir);
  for (const char* f : {"config.json", "model.safetensors"})
    fs::copy_file(test::fixture(std::string("line/model/") + f), dir / f);
  return dir.string();
}

std::string hash_of(const std::string& path) {
  char hex[24];
  std::snprintf(hex, sizeof(hex), "%016" PRIx64, fnv1a64_file(path).value());
  return hex;
}

void write(const std::string& path, const std::string& text) { std::ofstream(path, std::ios::trunc) << text; }

void expect_refused(const Result<DType>& r, ErrorCode code, const std::string& phrase) {
  ASSERT_FALSE(r.is_ok()) << phrase;
  EXPECT_EQ(r.status().code(), code) << r.status().to_string();
  EXPECT_NE(r.status().to_string().find(phrase), std::string::npos) << r.status().to_string();
  EXPECT_NE(r.status().to_string().find("variants.json"), std::string::npos) << r.status().to_string();
}

TEST(LineVariants, Fnv1a64MatchesTheReferenceVectors) {
  testing::TempDir tmp;
  const std::string f = tmp.file("a.bin");
  write(f, "a");  // FNV-1a 64 test vector: "a" -> af63dc4c8601ec8c
  EXPECT_EQ(hash_of(f), "af63dc4c8601ec8c");
  write(f, "foobar");  // -> 85944171f73967e8
  EXPECT_EQ(hash_of(f), "85944171f73967e8");
}

TEST(LineVariants, UsedOnlyWherePassedForThisModel) {
  testing::TempDir tmp;
  const std::string dir = model_copy(tmp);
  EXPECT_EQ(line_weights_for(dir, "", false).value(), DType::kF32);
  EXPECT_EQ(line_weights_for(dir, "f32", false).value(), DType::kF32);
  expect_refused(line_weights_for(dir, "q8_0", false), ErrorCode::kNotFound, "no quantized variant");
  EXPECT_EQ(line_weights_for(dir, "q8_0", true).value(), DType::kQ8_0);  // --ungated
  auto bad = line_weights_for(dir, "q4_k", false);
  ASSERT_FALSE(bad.is_ok());
  EXPECT_NE(bad.status().to_string().find("unknown weight type 'q4_k'"), std::string::npos);

  const std::string json = dir + "/variants.json";
  const std::string h = hash_of(dir + "/model.safetensors");
  write(json, R"({"model_fnv1a64": ")" + h + R"(", "variants": {"q8_0": {"passed": true},
      "tq2_0_g128": {"passed": false, "why": "seen CER 0.9 > 1.1 x f32's 0.3 + 0.01"}}})");
  EXPECT_EQ(line_weights_for(dir, "q8_0", false).value(), DType::kQ8_0);
  expect_refused(line_weights_for(dir, "tq2_0_g128", false), ErrorCode::kInvalidArgument,
                 "failed its quality gate (seen CER 0.9 > 1.1 x f32's 0.3 + 0.01)");
  expect_refused(line_weights_for(dir, "fp8_e4m3", false), ErrorCode::kNotFound, "f8_e4m3 variant");

  // Retrained weights: the old verdicts no longer apply.
  write(json, R"({"model_fnv1a64": "0123456789abcdef", "variants": {"q8_0": {"passed": true}}})");
  expect_refused(line_weights_for(dir, "q8_0", false), ErrorCode::kInvalidArgument, "another model.safetensors");

  for (const char* text : {R"({"variants": {}})", R"([1])", R"({"model_fnv1a64": 5, "variants": {}})", "{"})
    expect_refused((write(json, text), line_weights_for(dir, "q8_0", false)), ErrorCode::kInvalidFile,
                   "variants.json");
  write(json, R"({"model_fnv1a64": ")" + h + R"(", "variants": {"q8_0": {"passed": "yes"}}})");
  expect_refused(line_weights_for(dir, "q8_0", false), ErrorCode::kInvalidFile, "no boolean \"passed\"");
}

// The studio runs a passed variant: a quantized forward, close to (not equal to) the f32 weights' line.
TEST(LineVariants, StudioRunsAPassedVariant) {
  testing::TempDir tmp;
  const std::string dir = model_copy(tmp);
  write(dir + "/variants.json", R"({"model_fnv1a64": ")" + hash_of(dir + "/model.safetensors") +
                                    R"(", "variants": {"q8_0": {"passed": true}}})");
  auto run = [&](const std::string& weights) {
    LineStudioOptions o;
    o.model_dir = dir;
    o.threads = 1;
    o.device = DeviceChoice::kCpu;
    o.weights = weights;
    auto studio = LineStudio::open(o);
    EXPECT_TRUE(studio.is_ok()) << studio.status().to_string();
    LineRequest r;
    r.texts = {"Hej"};
    r.seed = 5;
    r.style = LineStyle::none();
    LineSampling s = (*studio)->defaults();
    s.steps = 2;
    r.sampling = s;
    auto out = (*studio)->generate(r, nullptr);
    EXPECT_TRUE(out.is_ok()) << out.status().to_string();
    return std::move(out).value()[0].gray;
  };
  const auto f32 = run("f32"), q8 = run("q8_0");
  ASSERT_EQ(f32.size(), q8.size());
  EXPECT_NE(f32, q8);
  int max_diff = 0;
  for (size_t i = 0; i < f32.size(); ++i) max_diff = std::max(max_diff, std::abs(int(f32[i]) - int(q8[i])));
  EXPECT_LE(max_diff, 64);
}

}  // namespace
}  // namespace quill
