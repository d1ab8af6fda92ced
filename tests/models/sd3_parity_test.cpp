// SD3Transformer2DModel parity against diffusers: fixtures from tools/make_fixtures.py hold a
// tiny random model saved by diffusers, inputs, and diffusers' output.
#include <gtest/gtest.h>

#include "io/safetensors.h"
#include "runtime/sd3_engine.h"
#include "support/test_util.h"

namespace quill {
namespace {

struct Case {
  const char* name;
  const char* expected_key;
  double tolerance;
};

class SD3Parity : public ::testing::TestWithParam<Case> {};

TEST_P(SD3Parity, MatchesDiffusers) {
  const Case c = GetParam();
  const std::string dir = test::fixture(std::string("sd3/") + c.name);
  ThreadPool pool(2);
  auto engine = open_sd3_engine(dir, pool);
  ASSERT_TRUE(engine.is_ok()) << engine.status().to_string();
  auto in = SafetensorsFile::open(dir + "/inputs.safetensors");
  ASSERT_TRUE(in.is_ok()) << in.status().to_string();
  auto ex = SafetensorsFile::open(dir + "/expected.safetensors");
  ASSERT_TRUE(ex.is_ok()) << ex.status().to_string();

  const Tensor hs = (*in)->tensor("hidden_states").value();
  const Tensor ehs = (*in)->tensor("encoder_hidden_states").value();
  const Tensor pooled = (*in)->tensor("pooled_projections").value();
  const Tensor ts = (*in)->tensor("timestep").value();
  const Tensor expected = (*ex)->tensor(c.expected_key).value();
  const SD3Bucket bucket{hs.dim(0), hs.dim(2), hs.dim(3), ehs.dim(1)};

  std::vector<float> out(static_cast<size_t>(expected.numel()), NAN);
  const auto hsv = hs.to_f32_vector(), ehsv = ehs.to_f32_vector(), pv = pooled.to_f32_vector(), tv = ts.to_f32_vector();
  Status st = (*engine)->forward(bucket, hsv.data(), ehsv.data(), pv.data(), tv.data(), out.data());
  ASSERT_TRUE(st.is_ok()) << st.to_string();
  const double rel = test::rel_l2(out, expected.to_f32_vector());
  RecordProperty("rel_l2", std::to_string(rel));
  EXPECT_LE(rel, c.tolerance) << c.name << " rel " << rel;
  // The plan was built once; a second forward reuses it and gives the same bits.
  std::vector<float> again(out.size(), NAN);
  ASSERT_TRUE((*engine)->forward(bucket, hsv.data(), ehsv.data(), pv.data(), tv.data(), again.data()).is_ok());
  EXPECT_EQ((*engine)->plan_stats().builds, 1u);
  EXPECT_EQ((*engine)->plan_stats().hits, 1u);
  EXPECT_EQ(test::rel_l2(again, out), 0.0);
}

INSTANTIATE_TEST_SUITE_P(Fixtures, SD3Parity,
                         ::testing::Values(Case{"tiny", "sample", 1e-4}, Case{"sd35", "sample", 1e-4},
                                           Case{"patch2_wide", "sample", 1e-4},
                                           // bf16-stored weights: Quill computes in f32 from the bf16 values,
                                           // compared with diffusers' f32 run on the same upcast weights.
                                           Case{"bf16", "sample", 1e-4},
                                           // inner dim 128, bf16-stored: the quantized-forward tests' input.
                                           Case{"q128", "sample", 1e-4}),
                         [](const auto& info) { return std::string(info.param.name); });

TEST(SD3Engine, RejectsBadBuckets) {
  ThreadPool pool(1);
  auto engine = open_sd3_engine(test::fixture("sd3/patch2_wide"), pool);
  ASSERT_TRUE(engine.is_ok()) << engine.status().to_string();
  auto r = (*engine)->plan({1, 15, 40, 13});
  ASSERT_FALSE(r.is_ok());
  EXPECT_NE(r.status().message().find("multiples of patch_size 2"), std::string::npos) << r.status().to_string();
  auto big = (*engine)->plan({1, 2000, 2000, 13});
  ASSERT_FALSE(big.is_ok());
  EXPECT_NE(big.status().message().find("pos_embed_max_size"), std::string::npos);
}

TEST(SD3Engine, ConfigWeightMismatchNamesTheTensor) {
  auto files = ModelFiles::open(test::fixture("sd3/tiny"));
  ASSERT_TRUE(files.is_ok()) << files.status().to_string();
  const auto original = (*files)->config();
  // Config says 5 layers, weights hold 4: block 3 is no longer the context_pre_only block, so its
  // context modulation must be 6D, and the stored 2D one is reported with both shapes.
  auto cfg = original;
  cfg["num_layers"] = 5;
  (*files)->set((*files)->path(), (*files)->format(), cfg);
  auto m = SD3Transformer::load(*files);
  ASSERT_FALSE(m.is_ok());
  EXPECT_NE(m.status().to_string().find("tensor 'transformer_blocks.3.norm1_context.linear.weight'"), std::string::npos)
      << m.status().to_string();
  EXPECT_NE(m.status().to_string().find("(expected [192, 32], found [64, 32])"), std::string::npos);
  // Config asks for dual attention in block 1, which the weights lack.
  cfg = original;
  cfg["dual_attention_layers"] = {1};
  (*files)->set((*files)->path(), (*files)->format(), cfg);
  auto d = SD3Transformer::load(*files);
  ASSERT_FALSE(d.is_ok());
  EXPECT_NE(d.status().to_string().find("transformer_blocks.1.norm1.linear.weight"), std::string::npos)
      << d.status().to_string();
}

}  // namespace
}  // namespace quill
