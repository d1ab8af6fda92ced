// Ternary and other quantized FLUX.2 transformers (flux2/q128: every block Linear has K % 128 ==
// 0): `quill quantize`'s default policy turns exactly the block matmul Linears (12 per double
// block, 2 per single block, as Bonsai Image does for klein) into the chosen type and keeps the
// embedders, the shared modulation and the final layer in bf16; the GGUF runs through the engine
// in exact and A8 ternary modes.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <regex>

#include "io/io_test_util.h"
#include "io/safetensors.h"
#include "models/flux2_transformer.h"
#include "quant/formats.h"
#include "quant/quant_linear.h"
#include "quant/quantize_model.h"
#include "runtime/engine.h"
#include "support/test_util.h"
#include "support/scoped_env.h"

namespace quill {
namespace {

struct Inputs {
  std::vector<float> hs, ehs, t, img_ids, txt_ids, expected;
  Flux2Bucket bucket;
};

Inputs load_inputs() {
  const std::string dir = test::fixture("flux2/q128");
  auto in = SafetensorsFile::open(dir + "/inputs.safetensors").value();
  Inputs r;
  const Tensor hs = in->tensor("hidden_states").value(), ehs = in->tensor("encoder_hidden_states").value();
  r.hs = hs.to_f32_vector();
  r.ehs = ehs.to_f32_vector();
  r.t = in->tensor("timestep").value().to_f32_vector();
  r.img_ids = in->tensor("img_ids").value().to_f32_vector();
  r.txt_ids = in->tensor("txt_ids").value().to_f32_vector();
  r.expected = SafetensorsFile::open(dir + "/expected.safetensors").value()->tensor("sample").value().to_f32_vector();
  r.bucket = {hs.dim(0), hs.dim(1), ehs.dim(1)};
  return r;
}

Result<std::vector<float>> run_model(const std::string& path, const Inputs& in) {
  ThreadPool pool(2);
  QUILL_ASSIGN_OR_RETURN(auto engine, open_engine<Flux2Transformer>(path, pool));
  std::vector<float> out(in.expected.size(), NAN);
  const Flux2Inputs fi{in.hs.data(), in.ehs.data(), in.t.data(), nullptr, in.img_ids.data(), in.txt_ids.data()};
  QUILL_RETURN_IF_ERROR(engine->forward(in.bucket, fi, out.data()));
  return out;
}

std::string quantize(const testing::TempDir& dir, DType type) {
  auto files = ModelFiles::open(test::fixture("flux2/q128")).value();
  const auto plan = quant::plan_quantization(*files, type, {});
  const std::string out = dir.file(std::string(dtype_name(type)) + ".gguf");
  Status st = quant::quantize_model(*files, plan, type, "", out, nullptr);
  EXPECT_TRUE(st.is_ok()) << st.to_string();
  return out;
}

TEST(Flux2Quantized, DefaultPolicyQuantizesExactlyTheBlockMatmuls) {
  auto files = ModelFiles::open(test::fixture("flux2/q128")).value();
  const auto plan = quant::plan_quantization(*files, DType::kTQ2_0_G128, {});
  const Flux2Config c = Flux2Config::from_json(files->config(), "config.json").value();
  const std::regex matmul(
      R"(^(transformer_blocks\.\d+\.(attn\.(to_[qkv]|to_out\.0|add_[qkv]_proj|to_add_out)|ff(_context)?\.linear_(in|out))|single_transformer_blocks\.\d+\.attn\.(to_qkv_mlp_proj|to_out))\.weight$)");
  int64_t ternary = 0;
  for (const auto& p : plan) {
    const bool want = std::regex_match(p.name, matmul);
    EXPECT_EQ(p.to == DType::kTQ2_0_G128, want) << p.name << ": " << p.reason;
    ternary += p.to == DType::kTQ2_0_G128;
    if (!want && p.shape.rank() == 2) {
      EXPECT_EQ(p.to, DType::kBF16) << p.name;
    }
  }
  EXPECT_EQ(ternary, 12 * c.num_layers + 2 * c.num_single_layers);
}

TEST(Flux2Quantized, BflCheckpointQuantizesItsBlocksAndRuns) {
  // BFL names (double_blocks / single_blocks, fused qkv): the block matmuls become q8_0 (K = 32
  // fits q8_0's blocks), and the GGUF runs with its config inferred from the shapes again.
  auto files = ModelFiles::open(test::fixture("flux2/bfl/flux2-tiny-bfl.safetensors")).value();
  const auto plan = quant::plan_quantization(*files, DType::kQ8_0, {});
  int64_t quantized = 0;
  for (const auto& p : plan) {
    const bool block = p.name.rfind("double_blocks.", 0) == 0 || p.name.rfind("single_blocks.", 0) == 0;
    if (block && p.shape.rank() == 2) {
      EXPECT_EQ(p.to, DType::kQ8_0) << p.name << ": " << p.reason;
    }
    quantized += p.to == DType::kQ8_0;
  }
  EXPECT_EQ(quantized, 8 * 2 + 2 * 3);  // 8 per double block (2 fused qkv), 2 per single block
  testing::TempDir dir;
  const std::string out = dir.file("bfl-q8.gguf");
  ASSERT_TRUE(quant::quantize_model(*files, plan, DType::kQ8_0, "", out, nullptr).is_ok());
  ThreadPool pool(2);
  auto engine = open_engine<Flux2Transformer>(out, pool);
  ASSERT_TRUE(engine.is_ok()) << engine.status().to_string();
  const std::string ref = test::fixture("flux2/double_single");
  auto in = SafetensorsFile::open(ref + "/inputs.safetensors").value();
  const auto hs = in->tensor("hidden_states").value(), ehs = in->tensor("encoder_hidden_states").value();
  const auto hv = hs.to_f32_vector(), ev = ehs.to_f32_vector(), tv = in->tensor("timestep").value().to_f32_vector(),
             iv = in->tensor("img_ids").value().to_f32_vector(), xv = in->tensor("txt_ids").value().to_f32_vector();
  const auto expected = SafetensorsFile::open(ref + "/expected.safetensors").value()->tensor("sample").value().to_f32_vector();
  std::vector<float> got(expected.size(), NAN);
  ASSERT_TRUE((*engine)->forward({hs.dim(0), hs.dim(1), ehs.dim(1)},
                                 Flux2Inputs{hv.data(), ev.data(), tv.data(), nullptr, iv.data(), xv.data()}, got.data())
                  .is_ok());
  EXPECT_GE(test::cosine(got, expected), 0.999);
}

// Bonsai Image's GemLite int2 layout (synthetic, of flux2/q128's weights) converted by
// tools/convert_bonsai.py: the GGUF runs and matches diffusers on the dense decoded weights.
TEST(Flux2Quantized, ConvertedBonsaiLayoutMatchesDiffusersOnTheDecodedWeights) {
  const test::ScopedEnv exact_mode("QUILL_TERNARY_MODE", "exact");
  const Inputs in = load_inputs();
  auto out = run_model(test::fixture("flux2/bonsai/klein-tiny-bonsai.gguf"), in);
  ASSERT_TRUE(out.is_ok()) << out.status().to_string();
  const auto expected = SafetensorsFile::open(test::fixture("flux2/bonsai/expected.safetensors"))
                            .value()
                            ->tensor("sample")
                            .value()
                            .to_f32_vector();
  const double rel = test::rel_l2(*out, expected);
  std::printf("[ quantized ] flux2/bonsai converted GGUF vs diffusers on decoded weights: rel %.3e\n", rel);
  EXPECT_LE(rel, 1e-4);
  auto files = ModelFiles::open(test::fixture("flux2/bonsai/klein-tiny-bonsai.gguf")).value();
  int64_t ternary = 0;
  for (const auto& [name, e] : files->entries()) ternary += e.tensor.dtype() == DType::kTQ2_0_G128;
  EXPECT_EQ(ternary, 14);
}

TEST(Flux2Quantized, ExactTernaryEqualsDequantizedF32AndA8IsClose) {
  const test::ScopedEnv exact_mode("QUILL_TERNARY_MODE", "exact");
  testing::TempDir dir;
  const Inputs in = load_inputs();
  const std::string gguf = quantize(dir, DType::kTQ2_0_G128);
  auto exact = run_model(gguf, in);
  ASSERT_TRUE(exact.is_ok()) << exact.status().to_string();

  // The same tensors with the ternary weights dequantized to f32.
  auto files = ModelFiles::open(gguf).value();
  std::vector<std::pair<std::string, Tensor>> tensors;
  for (const auto& [name, e] : files->entries())
    tensors.emplace_back(name, dtype_traits(e.tensor.dtype()).is_quantized ? quant::dequantize_tensor(e.tensor).value()
                                                                            : e.tensor);
  const std::string folder = dir.file("dequantized");
  std::filesystem::create_directories(folder);
  ASSERT_TRUE(write_safetensors(folder + "/diffusion_pytorch_model.safetensors", tensors, {}).is_ok());
  std::ofstream(folder + "/config.json") << files->config().dump();
  auto reference = run_model(folder, in);
  ASSERT_TRUE(reference.is_ok()) << reference.status().to_string();
  const double rel = test::rel_l2(*exact, *reference);
  std::printf("[ quantized ] flux2/q128 tq2_0_g128 exact vs dequantized f32: rel %.3e\n", rel);
  EXPECT_LE(rel, 1e-5);
  EXPECT_GT(test::rel_l2(*exact, in.expected), 1e-2);  // ternary really changed the model

  auto a8 = [&] {
    const test::ScopedEnv mode("QUILL_TERNARY_MODE", "a8");
    return run_model(gguf, in);
  }();
  ASSERT_TRUE(a8.is_ok()) << a8.status().to_string();
  const double a8_cos = test::cosine(*a8, *exact);
  std::printf("[ quantized ] flux2/q128 tq2_0_g128 A8 vs exact: cosine %.6f rel %.3e\n", a8_cos,
              test::rel_l2(*a8, *exact));
  EXPECT_GE(a8_cos, 0.999);
  // the int8-activation kernel really ran (where this CPU level has one; elsewhere a8 runs exact)
  if (quant::has_a8_kernel(DType::kTQ2_0_G128)) {
    EXPECT_GT(test::rel_l2(*a8, *exact), 1e-6);
  }
}

TEST(Flux2Quantized, EveryTypeRunsAndIsCloseToF32) {
  testing::TempDir dir;
  const Inputs in = load_inputs();
  struct Case {
    DType type;
    double min_cosine;
  };
  const Case cases[] = {{DType::kBF16, 0.9999},
                        {DType::kF16, 0.9999},
                        {DType::kQ8_0, 0.999},
                        {DType::kF8E4M3, 0.999},
                        {DType::kTQ2_0_G128, 0.5}};
  for (const Case& c : cases) {
    auto out = run_model(quantize(dir, c.type), in);
    ASSERT_TRUE(out.is_ok()) << dtype_name(c.type) << ": " << out.status().to_string();
    const double cos = test::cosine(*out, in.expected);
    std::printf("[ quantized ] flux2/q128 %-10s cosine vs diffusers f32 %.6f\n", dtype_name(c.type), cos);
    EXPECT_GE(cos, c.min_cosine) << dtype_name(c.type);
  }
}

}  // namespace
}  // namespace quill
