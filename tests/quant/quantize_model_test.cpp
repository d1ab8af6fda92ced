// `quill quantize`'s planner and converter: default policy, rules, K not a multiple of the block,
// error messages, and a written GGUF that reads back with the planned dtypes.
#include "quant/quantize_model.h"

#include <gtest/gtest.h>

#include <cstring>

#include "io/gguf.h"
#include "io/io_test_util.h"
#include "io/safetensors.h"
#include "models/weights.h"
#include "quant/formats.h"
#include "support/test_util.h"

namespace quill::quant {
namespace {

const TensorPlan* find(const std::vector<TensorPlan>& plan, const std::string& name) {
  for (const auto& p : plan)
    if (p.name == name) return &p;
  return nullptr;
}

TEST(QuantizeRules, ParsesAndRejectsWithContext) {
  auto ok = parse_quant_rules("ff\\.net\\.2=q8_0,attn\\.to_out=keep,,proj=BF16");
  ASSERT_TRUE(ok.is_ok()) << ok.status().to_string();
  ASSERT_EQ(ok->size(), 3u);
  EXPECT_EQ((*ok)[0].dtype, DType::kQ8_0);
  EXPECT_TRUE((*ok)[1].keep);
  EXPECT_EQ((*ok)[2].dtype, DType::kBF16);
  EXPECT_TRUE(parse_quant_rules("").value().empty());

  const std::pair<const char*, const char*> bad[] = {
      {"noequals", "is not REGEX=TYPE"},
      {"x=", "is not REGEX=TYPE"},
      {"([=q8_0", "bad regular expression"},
      {"a=q4_k", "unknown weight type 'q4_k'"},
  };
  for (const auto& [spec, phrase] : bad) {
    auto r = parse_quant_rules(spec);
    ASSERT_FALSE(r.is_ok()) << spec;
    EXPECT_NE(r.status().to_string().find(phrase), std::string::npos) << r.status().to_string();
  }
  EXPECT_FALSE(parse_quant_type("int4").is_ok());
  EXPECT_EQ(parse_quant_type("TQ2_0_G128").value(), DType::kTQ2_0_G128);
  EXPECT_EQ(parse_quant_type("fp8_e4m3").value(), DType::kF8E4M3);
}

TEST(QuantizePlan, DefaultPolicyOnAModelWhoseBlocksDivideTheBlockSize) {
  auto files = ModelFiles::open(test::fixture("sd3/q128"));
  ASSERT_TRUE(files.is_ok()) << files.status().to_string();
  const auto plan = plan_quantization(**files, DType::kTQ2_0_G128, {});
  ASSERT_EQ(plan.size(), (*files)->entries().size());
  int ternary = 0;
  for (const auto& p : plan) {
    if (p.shape.rank() < 2) {
      EXPECT_EQ(p.to, p.from) << p.name;
    } else if (p.name.rfind("transformer_blocks.", 0) == 0 && p.name.size() > 7 &&
               p.name.substr(p.name.size() - 7) == ".weight") {
      EXPECT_EQ(p.to, DType::kTQ2_0_G128) << p.name << ": " << p.reason;
      ++ternary;
    } else {
      EXPECT_EQ(p.to, DType::kBF16) << p.name << ": " << p.reason;
    }
  }
  EXPECT_GT(ternary, 20);
  EXPECT_EQ(find(plan, "proj_out.weight")->to, DType::kBF16);
  EXPECT_EQ(find(plan, "context_embedder.weight")->to, DType::kBF16);
  EXPECT_EQ(find(plan, "pos_embed.proj.weight")->to, DType::kBF16);
  int64_t in = 0, out = 0;
  plan_bytes(**files, plan, &in, &out);
  EXPECT_LT(out * 3, in);  // bf16 source -> mostly 2.1-bit weights
}

TEST(QuantizePlan, KNotAMultipleOfTheBlockFallsBackToBf16AndSaysSo) {
  auto files = ModelFiles::open(test::fixture("sd3/tiny"));  // inner dim 32
  ASSERT_TRUE(files.is_ok()) << files.status().to_string();
  const auto plan = plan_quantization(**files, DType::kTQ2_0_G128, {});
  const TensorPlan* q = find(plan, "transformer_blocks.0.attn.to_q.weight");
  ASSERT_NE(q, nullptr);
  EXPECT_EQ(q->to, DType::kBF16);
  EXPECT_NE(q->reason.find("K=32 is not a multiple of 128"), std::string::npos) << q->reason;
  // q8_0's 32-blocks fit.
  const auto plan8 = plan_quantization(**files, DType::kQ8_0, {});
  EXPECT_EQ(find(plan8, "transformer_blocks.0.attn.to_q.weight")->to, DType::kQ8_0);
}

TEST(QuantizePlan, RulesOverrideTheDefaultFirstMatchWins) {
  auto files = ModelFiles::open(test::fixture("sd3/q128"));
  ASSERT_TRUE(files.is_ok());
  auto rules = parse_quant_rules("ff\\.net\\.2=q8_0,attn\\.to_out=keep,proj_out=f16,ff=f32");
  ASSERT_TRUE(rules.is_ok());
  const auto plan = plan_quantization(**files, DType::kTQ2_0_G128, *rules);
  EXPECT_EQ(find(plan, "transformer_blocks.0.ff.net.2.weight")->to, DType::kQ8_0);
  EXPECT_EQ(find(plan, "transformer_blocks.0.ff.net.0.proj.weight")->to, DType::kF32);
  const TensorPlan* out = find(plan, "transformer_blocks.0.attn.to_out.0.weight");
  EXPECT_EQ(out->to, out->from);
  EXPECT_EQ(find(plan, "proj_out.weight")->to, DType::kF16);
  EXPECT_EQ(find(plan, "transformer_blocks.0.attn.to_q.weight")->to, DType::kTQ2_0_G128);
  // 1-D tensors are never touched by rules.
  EXPECT_EQ(find(plan, "transformer_blocks.0.ff.net.2.bias")->to,
            find(plan, "transformer_blocks.0.ff.net.2.bias")->from);
}

TEST(QuantizeConvert, ReportsReconstructionError) {
  const auto w = test::random_normal(64 * 256, 7);
  Tensor t = Tensor::empty(DType::kF32, Shape{64, 256});
  std::copy(w.begin(), w.end(), t.data_as<float>());
  double rel = -1;
  ASSERT_TRUE(convert_tensor(t, DType::kF32, &rel).is_ok());
  EXPECT_EQ(rel, 0.0);
  auto bf = convert_tensor(t, DType::kBF16, &rel);
  ASSERT_TRUE(bf.is_ok());
  EXPECT_GT(rel, 1e-4);
  EXPECT_LT(rel, 4e-3);
  auto q8 = convert_tensor(t, DType::kQ8_0, &rel);
  ASSERT_TRUE(q8.is_ok());
  EXPECT_LT(rel, 1.5e-2);
  auto tq = convert_tensor(t, DType::kTQ2_0_G128, &rel);
  ASSERT_TRUE(tq.is_ok());
  EXPECT_GT(rel, 0.3);  // ternary of Gaussian weights loses a lot; it must be measured, not hidden
  EXPECT_LT(rel, 0.7);
  Tensor v = Tensor::empty(DType::kF32, Shape{256});
  auto bad = convert_tensor(v, DType::kTQ2_0_G128, &rel);
  ASSERT_FALSE(bad.is_ok());
  EXPECT_NE(bad.status().to_string().find("needs a 2-D weight"), std::string::npos);
}

// fp8 e4m3: the weight plus "<name>_scale" f32 [N]; the loader attaches the scales to the weight.
TEST(QuantizeModel, Fp8WeightsCarryTheirRowScales) {
  testing::TempDir dir;
  auto files = ModelFiles::open(test::fixture("sd3/q128"));
  ASSERT_TRUE(files.is_ok());
  const auto plan = plan_quantization(**files, DType::kF8E4M3, {});
  const std::string out = dir.file("fp8.gguf");
  QuantizeReport report;
  ASSERT_TRUE(quantize_model(**files, plan, DType::kF8E4M3, "", out, &report).is_ok());
  EXPECT_GT(report.rel_error, 0.0);
  EXPECT_LT(report.rel_error, 0.05);
  auto back = ModelFiles::open(out);
  ASSERT_TRUE(back.is_ok()) << back.status().to_string();
  auto w = (*back)->get("transformer_blocks.0.attn.to_q.weight");
  ASSERT_TRUE(w.is_ok());
  EXPECT_EQ(w->dtype(), DType::kF8E4M3);
  auto s = (*back)->get("transformer_blocks.0.attn.to_q.weight_scale");
  ASSERT_TRUE(s.is_ok()) << s.status().to_string();
  EXPECT_EQ(s->dtype(), DType::kF32);
  EXPECT_EQ(s->shape(), Shape({w->dim(0)}));
  // The writer stored the scales that reproduce the weights: dequantized row 0 vs the source.
  const Tensor src = (*files)->get("transformer_blocks.0.attn.to_q.weight").value();
  std::vector<float> src0(size_t(src.dim(1))), back0(size_t(src.dim(1)));
  convert_to_f32(src.dtype(), src.data(), src0.data(), src.dim(1));
  ASSERT_TRUE(
      dequantize_fp8_e4m3_rows(w->data_as<const uint8_t>(), s->data_as<const float>(), 1, w->dim(1), back0.data())
          .is_ok());
  EXPECT_LT(test::rel_l2(back0, src0), 0.05);
}

TEST(QuantizeModel, Fp8WeightWithoutItsScalesIsAClearError) {
  testing::TempDir dir;
  Tensor w = Tensor::empty(DType::kF8E4M3, Shape{4, 8});
  const std::string path = dir.file("lin.safetensors");
  ASSERT_TRUE(write_safetensors(path, {{"lin.weight", w}}, {}).is_ok());
  auto files = ModelFiles::open(path);
  ASSERT_TRUE(files.is_ok());
  auto l = load_linear(**files, "lin", 8, 4, false);
  ASSERT_FALSE(l.is_ok());
  EXPECT_NE(l.status().to_string().find("lin.weight_scale"), std::string::npos) << l.status().to_string();
}

TEST(QuantizeModel, WritesGgufThatReadsBackAsPlanned) {
  testing::TempDir dir;
  auto files = ModelFiles::open(test::fixture("sd3/q128"));
  ASSERT_TRUE(files.is_ok());
  const auto plan = plan_quantization(**files, DType::kQ8_0, {});
  QuantizeReport report;
  int calls = 0;
  const std::string out = dir.file("q8.gguf");
  Status st = quantize_model(**files, plan, DType::kQ8_0, "", out, &report, [&](int) { ++calls; });
  ASSERT_TRUE(st.is_ok()) << st.to_string();
  EXPECT_EQ(calls, int(plan.size()));
  EXPECT_GT(report.rel_error, 0.0);
  EXPECT_LT(report.rel_error, 1e-2);
  auto back = ModelFiles::open(out);
  ASSERT_TRUE(back.is_ok()) << back.status().to_string();
  EXPECT_EQ((*back)->format(), "gguf");
  EXPECT_EQ((*back)->config().value("_class_name", ""), "SD3Transformer2DModel");
  for (const auto& p : plan) {
    auto t = (*back)->get(p.name);
    ASSERT_TRUE(t.is_ok()) << p.name;
    EXPECT_EQ(t->dtype(), p.to) << p.name;
    EXPECT_EQ(t->shape(), p.shape) << p.name;
  }
}

// What `quill line --weights` loads: the same tensors, bytes and fp8 row scales as the GGUF that
// `quill quantize` writes and reads back.
TEST(QuantizeModel, InMemoryEqualsTheGgufReadBack) {
  for (DType type : {DType::kQ8_0, DType::kF8E4M3, DType::kTQ2_0_G128}) {
    testing::TempDir dir;
    auto files = ModelFiles::open(test::fixture("sd3/q128"));
    ASSERT_TRUE(files.is_ok());
    const std::string out = dir.file("v.gguf");
    ASSERT_TRUE(quantize_model(**files, plan_quantization(**files, type, {}), type, "", out, nullptr).is_ok());
    auto back = ModelFiles::open(out);
    ASSERT_TRUE(back.is_ok()) << back.status().to_string();
    auto mem = quantize_in_memory(**files, type);
    ASSERT_TRUE(mem.is_ok()) << mem.status().to_string();
    EXPECT_EQ((*mem)->config(), (*files)->config());
    EXPECT_EQ((*mem)->tensor_names(), (*back)->tensor_names()) << dtype_name(type);
    for (const auto& name : (*back)->tensor_names()) {
      const Tensor a = (*mem)->get(name).value(), b = (*back)->get(name).value();
      ASSERT_EQ(a.dtype(), b.dtype()) << name;
      ASSERT_EQ(a.shape(), b.shape()) << name;
      ASSERT_EQ(a.nbytes(), b.nbytes()) << name;
      EXPECT_EQ(0, std::memcmp(a.data(), b.data(), size_t(a.nbytes()))) << dtype_name(type) << " " << name;
    }
  }
}

}  // namespace
}  // namespace quill::quant
