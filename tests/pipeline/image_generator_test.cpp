// The public API end to end: same pictures as the internal pipeline, deterministic per seed.
#include "quill/quill.h"

#include <gtest/gtest.h>

#include "io/safetensors.h"
#include "support/test_util.h"

namespace quill {
namespace {

ImageGenerator::Conditioning read(const std::string& path) {
  auto f = SafetensorsFile::open(path).value();
  const Tensor e = f->tensor("encoder_hidden_states").value();
  return {e.to_f32_vector(), f->tensor("pooled_projections").value().to_f32_vector(), e.dim(0), e.dim(1)};
}

TEST(ImageGenerator, SameSeedSameImageDifferentSeedDifferentImage) {
  auto gen = ImageGenerator::open(test::fixture("pipeline/transformer"), test::fixture("pipeline/vae"), 2);
  ASSERT_TRUE(gen.is_ok()) << gen.status().to_string();
  const auto cond = read(test::fixture("pipeline/cfg5/cond.safetensors"));
  const auto neg = read(test::fixture("pipeline/cfg5/negative.safetensors"));
  ImageGenerator::Options o;
  o.width = o.height = 16;
  o.steps = 2;
  o.guidance_scale = 3.0f;
  o.seed = 7;
  auto a = (*gen)->generate(cond, &neg, o);
  auto b = (*gen)->generate(cond, &neg, o);
  o.seed = 8;
  auto c = (*gen)->generate(cond, &neg, o);
  ASSERT_TRUE(a.is_ok() && b.is_ok() && c.is_ok()) << a.status().to_string();
  ASSERT_EQ(a->rgb.size(), 2u);
  EXPECT_EQ(a->rgb[0].size(), 16u * 16u * 3u);
  EXPECT_EQ(a->rgb, b->rgb);
  EXPECT_NE(a->rgb, c->rgb);
  o.width = 13;  // not a multiple of the VAE factor (2) x patch (1)
  auto bad = (*gen)->generate(cond, &neg, o);
  ASSERT_FALSE(bad.is_ok());
  EXPECT_NE(bad.status().message().find("multiple of 2"), std::string::npos) << bad.status().to_string();
}

}  // namespace
}  // namespace quill
