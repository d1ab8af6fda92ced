// Dinov2Model (transformers 5.23) parity: fixtures from tools/make_dinov2_fixtures.py hold tiny
// random models saved with save_pretrained, pixel inputs and transformers' outputs, at the
// config's image size and at a size that makes transformers resize the position table.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "backend/cpu/resize_bicubic.h"
#include "io/safetensors.h"
#include "models/dinov2.h"
#include "support/test_util.h"

namespace quill {
namespace {

struct Case {
  const char* model;
  const char* size;  // HxW of the fixture files
};

std::unique_ptr<Dinov2Encoder> load_encoder(std::shared_ptr<ModelFiles> files, ThreadPool& pool) {
  auto enc = Dinov2Encoder::load(std::move(files), pool);
  EXPECT_TRUE(enc.is_ok()) << enc.status().to_string();
  return enc.is_ok() ? std::move(enc).value() : nullptr;
}

std::unique_ptr<Dinov2Encoder> load_fixture(const std::string& model, ThreadPool& pool) {
  auto files = ModelFiles::open(test::fixture("dinov2/" + model));
  EXPECT_TRUE(files.is_ok()) << files.status().to_string();
  return files.is_ok() ? load_encoder(*files, pool) : nullptr;
}

class Dinov2Parity : public ::testing::TestWithParam<Case> {};

TEST_P(Dinov2Parity, MatchesTransformers) {
  const Case c = GetParam();
  const std::string dir = test::fixture(std::string("dinov2/") + c.model);
  ThreadPool pool(2);
  auto enc = load_fixture(c.model, pool);
  ASSERT_TRUE(enc);
  auto in = SafetensorsFile::open(dir + "/inputs_" + c.size + ".safetensors");
  ASSERT_TRUE(in.is_ok()) << in.status().to_string();
  auto ex = SafetensorsFile::open(dir + "/expected_" + c.size + ".safetensors");
  ASSERT_TRUE(ex.is_ok()) << ex.status().to_string();
  const Tensor pixels = (*in)->tensor("pixel_values").value();
  const Tensor want_pooled = (*ex)->tensor("pooler_output").value();
  const Tensor want_last = (*ex)->tensor("last_hidden_state").value();
  const int64_t B = pixels.dim(0), H = pixels.dim(2), W = pixels.dim(3), D = enc->hidden_size();
  ASSERT_EQ(want_last.shape(), Shape({B, enc->sequence_length(H, W), D}));

  std::vector<float> pooled(static_cast<size_t>(B * D), NAN), last(static_cast<size_t>(want_last.numel()), NAN);
  Status st = enc->encode(pixels, pooled.data(), last.data());
  ASSERT_TRUE(st.is_ok()) << st.to_string();
  const double rel_pooled = test::rel_l2(pooled, want_pooled.to_f32_vector());
  const double rel_last = test::rel_l2(last, want_last.to_f32_vector());
  RecordProperty("rel_l2_pooled", std::to_string(rel_pooled));
  RecordProperty("rel_l2_last_hidden", std::to_string(rel_last));
  std::printf("dinov2 %s %s: rel_l2 pooler_output %.3g last_hidden_state %.3g\n", c.model, c.size, rel_pooled,
              rel_last);
  // The contract is rel <= 1e-4; measured <= 6e-7 on every ISA level. tanh-GELU in place of the
  // exact one lands at ~1e-4 on these fixtures, so the bound is 1e-5 to tell the two apart.
  constexpr double kTolerance = 1e-5;
  EXPECT_LE(rel_pooled, kTolerance);
  EXPECT_LE(rel_last, kTolerance);

  // Without last_hidden, and with the arena reused: the same pooled bits.
  std::vector<float> again(pooled.size(), NAN);
  ASSERT_TRUE(enc->encode(pixels, again.data()).is_ok());
  EXPECT_EQ(test::rel_l2(again, pooled), 0.0);
}

INSTANTIATE_TEST_SUITE_P(Fixtures, Dinov2Parity,
                         ::testing::Values(Case{"gelu", "16x16"}, Case{"gelu", "24x20"}, Case{"swiglu", "15x15"},
                                           Case{"swiglu", "10x22"}),
                         [](const auto& info) { return std::string(info.param.model) + "_" + info.param.size; });

TEST(Dinov2Encoder, RejectsWrongChannelCount) {
  ThreadPool pool(1);
  auto enc = load_fixture("gelu", pool);
  ASSERT_TRUE(enc);
  std::vector<float> pixels(2 * 4 * 16 * 16, 0.5f), pooled(2 * 32);
  Status st = enc->encode(pixels.data(), 2, 4, 16, 16, pooled.data());
  ASSERT_FALSE(st.is_ok());
  EXPECT_EQ(st.code(), ErrorCode::kInvalidArgument);
  const std::string msg = st.to_string();
  EXPECT_NE(msg.find("channels"), std::string::npos) << msg;
  EXPECT_NE(msg.find("3"), std::string::npos) << msg;
  EXPECT_NE(msg.find("4"), std::string::npos) << msg;
}

TEST(Dinov2Encoder, RejectsImageSmallerThanAPatch) {
  ThreadPool pool(1);
  auto enc = load_fixture("gelu", pool);  // patch 4
  ASSERT_TRUE(enc);
  std::vector<float> pixels(1 * 3 * 3 * 16, 0.5f), pooled(32);
  Status st = enc->encode(pixels.data(), 1, 3, 3, 16, pooled.data());
  ASSERT_FALSE(st.is_ok());
  EXPECT_NE(st.to_string().find("smaller than one 4x4 patch"), std::string::npos) << st.to_string();
  st = enc->encode(pixels.data(), 1, 3, 16, 3, pooled.data());
  ASSERT_FALSE(st.is_ok());
  EXPECT_NE(st.to_string().find("smaller than one 4x4 patch"), std::string::npos) << st.to_string();
}

TEST(Dinov2Encoder, RejectsNon4dTensor) {
  ThreadPool pool(1);
  auto enc = load_fixture("gelu", pool);
  ASSERT_TRUE(enc);
  std::vector<float> pixels(3 * 16 * 16), pooled(32);
  const Tensor t(pixels.data(), DType::kF32, Shape({3, 16, 16}));
  EXPECT_FALSE(enc->encode(t, pooled.data()).is_ok());
}

TEST(Dinov2Encoder, MissingLayerNamesTheTensor) {
  ThreadPool pool(1);
  auto files = ModelFiles::open(test::fixture("dinov2/gelu"));
  ASSERT_TRUE(files.is_ok());
  auto cfg = (*files)->config();
  cfg["num_hidden_layers"] = 3;  // the weights hold 2
  (*files)->set((*files)->path(), (*files)->format(), cfg);
  auto enc = Dinov2Encoder::load(*files, pool);
  ASSERT_FALSE(enc.is_ok());
  EXPECT_NE(enc.status().to_string().find("encoder.layer.2."), std::string::npos) << enc.status().to_string();
}

// transformers 5 keeps q_proj / k_proj / v_proj / o_proj and gate_proj / up_proj / down_proj in
// memory (save_pretrained renames them back); a state dict under those names gives the same result.
TEST(Dinov2Encoder, ReadsInMemoryWeightNames) {
  ThreadPool pool(1);
  auto legacy = ModelFiles::open(test::fixture("dinov2/swiglu"));
  ASSERT_TRUE(legacy.is_ok());
  auto renamed = std::make_shared<ModelFiles>();
  renamed->set((*legacy)->path(), (*legacy)->format(), (*legacy)->config());
  auto replace = [](std::string s, const std::string& from, const std::string& to) {
    const auto at = s.find(from);
    return at == std::string::npos ? s : s.replace(at, from.size(), to);
  };
  int split = 0;
  for (const auto& [name, entry] : (*legacy)->entries()) {
    std::string n = name;
    for (auto [from, to] : {std::pair{"attention.attention.query", "attention.q_proj"},
                            {"attention.attention.key", "attention.k_proj"},
                            {"attention.attention.value", "attention.v_proj"},
                            {"attention.output.dense", "attention.o_proj"},
                            {"mlp.weights_out", "mlp.down_proj"}})
      n = replace(n, from, to);
    if (n.find("mlp.weights_in") != std::string::npos) {
      const int64_t half = entry.tensor.dim(0) / 2;  // gate rows first, then up
      renamed->entries()[replace(n, "weights_in", "gate_proj")] = {entry.tensor.slice(0, 0, half), entry.file};
      renamed->entries()[replace(n, "weights_in", "up_proj")] = {entry.tensor.slice(0, half, 2 * half), entry.file};
      ++split;
    } else {
      renamed->entries()[n] = entry;
    }
  }
  ASSERT_EQ(split, 4);  // weight and bias of 2 layers
  ASSERT_FALSE(renamed->has("encoder.layer.0.attention.attention.query.weight"));
  auto a = load_encoder(*legacy, pool);
  auto b = load_encoder(renamed, pool);
  ASSERT_TRUE(a && b);
  const auto pixels = test::random_normal(2 * 3 * 12 * 18, 5);
  std::vector<float> pa(2 * 24), pb(2 * 24);
  ASSERT_TRUE(a->encode(pixels.data(), 2, 3, 12, 18, pa.data()).is_ok());
  ASSERT_TRUE(b->encode(pixels.data(), 2, 3, 12, 18, pb.data()).is_ok());
  EXPECT_LE(test::rel_l2(pb, pa), 1e-6);
}

// The resize behind interpolate_pos_encoding against F.interpolate(mode="bicubic").
TEST(ResizeBicubic, MatchesTorch) {
  auto f = SafetensorsFile::open(test::fixture("dinov2/bicubic.safetensors"));
  ASSERT_TRUE(f.is_ok()) << f.status().to_string();
  const Tensor src = (*f)->tensor("src").value();  // [1, C, h, w]
  const int64_t C = src.dim(1), h = src.dim(2), w = src.dim(3);
  const auto s = src.to_f32_vector();
  std::vector<float> hwc(s.size());
  for (int64_t c = 0; c < C; ++c)
    for (int64_t i = 0; i < h * w; ++i) hwc[size_t(i * C + c)] = s[size_t(c * h * w + i)];
  int cases = 0;
  for (const auto& info : (*f)->tensors()) {
    if (info.name == "src") continue;
    const int64_t oh = info.shape[2], ow = info.shape[3];
    const auto want = (*f)->tensor(info.name).value().to_f32_vector();
    std::vector<float> out(static_cast<size_t>(oh * ow * C), NAN), chw(out.size());
    cpu::resize_bicubic(hwc.data(), h, w, C, out.data(), oh, ow);
    for (int64_t c = 0; c < C; ++c)
      for (int64_t i = 0; i < oh * ow; ++i) chw[size_t(c * oh * ow + i)] = out[size_t(i * C + c)];
    EXPECT_LE(test::rel_l2(chw, want), 1e-6) << info.name;
    ++cases;
  }
  EXPECT_EQ(cases, 6);
}

}  // namespace
}  // namespace quill
