// Quantized SD3 transformers through the real engine (bf16, f16, q8_0, fp8_e4m3 with row scales,
// tq2_0_g128): `sd3/q128` (every block linear has
// K % 128 == 0) quantized by quant::quantize_model for each type, run by open_sd3_engine from the
// GGUF. The exact ternary kernel must equal the same model with its weights dequantized to f32
// (rel <= 1e-5); each type's cosine against diffusers' f32 output is recorded.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "io/io_test_util.h"
#include "io/safetensors.h"
#include "quant/formats.h"
#include "quant/quantize_model.h"
#include "runtime/sd3_engine.h"
#include "support/test_util.h"
#include "support/scoped_env.h"

namespace quill {
namespace {

struct Inputs {
  std::vector<float> hs, ehs, pooled, ts, expected;
  SD3Bucket bucket;
};

Inputs load_inputs() {
  const std::string dir = test::fixture("sd3/q128");
  auto in = SafetensorsFile::open(dir + "/inputs.safetensors").value();
  auto ex = SafetensorsFile::open(dir + "/expected.safetensors").value();
  Inputs r;
  const Tensor hs = in->tensor("hidden_states").value(), ehs = in->tensor("encoder_hidden_states").value();
  r.hs = hs.to_f32_vector();
  r.ehs = ehs.to_f32_vector();
  r.pooled = in->tensor("pooled_projections").value().to_f32_vector();
  r.ts = in->tensor("timestep").value().to_f32_vector();
  r.expected = ex->tensor("sample").value().to_f32_vector();
  r.bucket = SD3Bucket{hs.dim(0), hs.dim(2), hs.dim(3), ehs.dim(1)};
  return r;
}

Result<std::vector<float>> run_model(const std::string& path, const Inputs& in) {
  ThreadPool pool(2);
  QUILL_ASSIGN_OR_RETURN(auto engine, open_sd3_engine(path, pool));
  std::vector<float> out(in.expected.size(), NAN);
  QUILL_RETURN_IF_ERROR(
      engine->forward(in.bucket, in.hs.data(), in.ehs.data(), in.pooled.data(), in.ts.data(), out.data()));
  return out;
}

std::string quantize(const testing::TempDir& dir, DType type) {
  auto files = ModelFiles::open(test::fixture("sd3/q128")).value();
  const auto plan = quant::plan_quantization(*files, type, {});
  const std::string out = dir.file(std::string(dtype_name(type)) + ".gguf");
  Status st = quant::quantize_model(*files, plan, type, "", out, nullptr);
  EXPECT_TRUE(st.is_ok()) << st.to_string();
  return out;
}

// The same tensors with every weight dequantized to f32, as a diffusers-style folder.
std::string dequantized_copy(const testing::TempDir& dir, const std::string& gguf) {
  auto files = ModelFiles::open(gguf).value();
  std::vector<std::pair<std::string, Tensor>> tensors;
  for (const auto& [name, e] : files->entries()) {
    if (e.tensor.rank() == 2 && dtype_traits(e.tensor.dtype()).is_quantized)
      tensors.emplace_back(name, quant::dequantize_tensor(e.tensor).value());
    else
      tensors.emplace_back(name, e.tensor);
  }
  const std::string folder = dir.file("dequantized");
  std::filesystem::create_directories(folder);
  EXPECT_TRUE(write_safetensors(folder + "/diffusion_pytorch_model.safetensors", tensors, {}).is_ok());
  std::ofstream(folder + "/config.json") << files->config().dump();
  return folder;
}

TEST(SD3Quantized, ExactTernaryEqualsDequantizedF32) {
  const test::ScopedEnv exact_mode("QUILL_TERNARY_MODE", "exact");
  testing::TempDir dir;
  const Inputs in = load_inputs();
  const std::string gguf = quantize(dir, DType::kTQ2_0_G128);
  auto fused = run_model(gguf, in);
  ASSERT_TRUE(fused.is_ok()) << fused.status().to_string();
  auto reference = run_model(dequantized_copy(dir, gguf), in);
  ASSERT_TRUE(reference.is_ok()) << reference.status().to_string();
  const double rel = test::rel_l2(*fused, *reference);
  RecordProperty("rel_l2_vs_dequantized", std::to_string(rel));
  EXPECT_LE(rel, 1e-5);
  // And ternary really changed the model (the comparison above is not trivially f32 vs f32).
  EXPECT_GT(test::rel_l2(*fused, in.expected), 1e-2);
}

TEST(SD3Quantized, EveryTypeRunsAndIsCloseToF32) {
  testing::TempDir dir;
  const Inputs in = load_inputs();
  struct Case {
    DType type;
    double min_cosine;
  };
  // Floors for this random-weight fixture (Gaussian weights are the worst case for ternary).
  const Case cases[] = {{DType::kBF16, 0.9999},
                        {DType::kF16, 0.9999},
                        {DType::kQ8_0, 0.999},
                        {DType::kF8E4M3, 0.999},
                        {DType::kTQ2_0_G128, 0.5}};
  for (const Case& c : cases) {
    auto out = run_model(quantize(dir, c.type), in);
    ASSERT_TRUE(out.is_ok()) << dtype_name(c.type) << ": " << out.status().to_string();
    const double cos = test::cosine(*out, in.expected);
    std::printf("[ quantized ] sd3/q128 %-10s cosine vs diffusers f32 %.6f  rel %.3e\n", dtype_name(c.type), cos,
                test::rel_l2(*out, in.expected));
    RecordProperty(std::string("cosine_") + dtype_name(c.type), std::to_string(cos));
    EXPECT_GE(cos, c.min_cosine) << dtype_name(c.type);
  }
}

}  // namespace
}  // namespace quill
