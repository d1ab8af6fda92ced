// Runs the real `quill info` binary on files made here.
#include <gtest/gtest.h>

#include <cstdio>

#include <nlohmann/json.hpp>

#include "io/gguf.h"
#include "io/safetensors.h"
#include "io_test_util.h"
#include "support/cli_run.h"

namespace quill {
namespace {

using testing::TempDir;

using test::CliRun;

CliRun run_cli(const std::string& args, const TempDir& dir) { return test::run_quill(args, dir.file("stderr.txt")); }

void make_model(const TempDir& dir) {
  testing::write_bytes(dir.file("model/config.json"), R"({"_class_name": "SD3Transformer2DModel", "num_layers": 24})");
  Tensor a = Tensor::empty(DType::kBF16, {4, 8});
  Tensor b = Tensor::empty(DType::kF32, {8});
  Tensor c = Tensor::empty(DType::kF32, {2, 3});
  ASSERT_TRUE(write_safetensors(dir.file("model/diffusion_pytorch_model.safetensors"),
                                {{"transformer_blocks.0.attn.add_q_proj.weight", a},
                                 {"pos_embed.pos_embed", b},
                                 {"context_embedder.weight", c}})
                  .is_ok());
}

TEST(CmdInfo, Text) {
  TempDir dir;
  make_model(dir);
  CliRun r = run_cli("info '" + dir.file("model") + "'", dir);
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("format:       diffusers"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("architecture: SD3Transformer2DModel (from config _class_name)"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("num_layers"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("tensors:      3"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("parameters:   46"), std::string::npos) << r.out;   // 32 + 8 + 6
  EXPECT_NE(r.out.find("bytes:        120"), std::string::npos) << r.out;  // 64 + 32 + 24
}

TEST(CmdInfo, Json) {
  TempDir dir;
  make_model(dir);
  CliRun r = run_cli("info --json --tensors '" + dir.file("model") + "'", dir);
  ASSERT_EQ(r.code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);  // exactly one JSON object
  EXPECT_EQ(j["format"], "diffusers");
  EXPECT_EQ(j["architecture"]["name"], "SD3Transformer2DModel");
  EXPECT_EQ(j["config"]["num_layers"], 24);
  EXPECT_EQ(j["tensor_count"], 3);
  EXPECT_EQ(j["parameters"], 46);
  EXPECT_EQ(j["bytes"], 120);
  EXPECT_EQ(j["dtypes"]["f32"]["tensors"], 2);
  EXPECT_EQ(j["dtypes"]["f32"]["parameters"], 14);
  EXPECT_EQ(j["dtypes"]["bf16"]["bytes"], 64);
  ASSERT_EQ(j["tensors"].size(), 3u);
  EXPECT_EQ(j["tensors"][0]["name"], "context_embedder.weight");
  EXPECT_EQ(j["tensors"][0]["shape"], nlohmann::json({2, 3}));
}

TEST(CmdInfo, GgufWithoutConfigSummarisesLongArrays) {
  TempDir dir;
  GgufWriter w;
  std::vector<std::string> vocab(1000, "tok");
  ASSERT_TRUE(w.add("tokenizer.ggml.tokens", GgufValue::strings(vocab)).is_ok());
  ASSERT_TRUE(w.add_tensor("decoder.conv_in.weight", Tensor::empty(DType::kF16, {4, 4})).is_ok());
  ASSERT_TRUE(w.write(dir.file("v.gguf")).is_ok());
  CliRun r = run_cli("info --json '" + dir.file("v.gguf") + "'", dir);
  ASSERT_EQ(r.code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["format"], "gguf");
  EXPECT_EQ(j["architecture"]["name"], "AutoencoderKL");
  EXPECT_EQ(j["config"]["tokenizer.ggml.tokens"], "<array of 1000 items>");
}

TEST(CmdInfo, ExitCodes) {
  TempDir dir;
  CliRun missing = run_cli("info '" + dir.file("nope.safetensors") + "'", dir);
  EXPECT_EQ(missing.code, 2);  // a missing or corrupt input is the caller's error
  EXPECT_NE(missing.err.find("quill: error:"), std::string::npos) << missing.err;
  EXPECT_NE(missing.err.find("nope.safetensors"), std::string::npos) << missing.err;

  testing::write_bytes(dir.file("bad.safetensors"), std::string("\x10\0\0\0\0\0\0\0{\"a\":", 13));
  CliRun corrupt = run_cli("info '" + dir.file("bad.safetensors") + "'", dir);
  EXPECT_EQ(corrupt.code, 2);
  EXPECT_NE(corrupt.err.find("header length exceeds the file"), std::string::npos) << corrupt.err;
  CliRun corrupt_json = run_cli("info --json '" + dir.file("bad.safetensors") + "'", dir);
  EXPECT_EQ(corrupt_json.code, 2);
  EXPECT_TRUE(corrupt_json.out.empty());

  EXPECT_EQ(run_cli("info", dir).code, 2);
  EXPECT_EQ(run_cli("info --frobnicate x", dir).code, 2);
}

}  // namespace
}  // namespace quill
