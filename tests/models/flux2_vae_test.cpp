// AutoencoderKLFlux2 against diffusers (tools/make_flux2_fixtures.py --case vae): packed transformer
// tokens -> BatchNorm de-normalisation -> 2x2 unpatchify -> decode, and the reference-image path
// encode -> patchify -> normalise -> pack, as Flux2KleinPipeline does them.
#include <gtest/gtest.h>

#include <cmath>

#include "io/model_files.h"
#include "io/safetensors.h"
#include "models/autoencoder_kl.h"
#include "models/flux2_latents.h"
#include "support/test_util.h"

namespace quill {
namespace {

struct VaeCase {
  std::unique_ptr<AutoencoderKL> vae;
  Flux2LatentStats stats;
  std::shared_ptr<SafetensorsFile> in, ex;
};

VaeCase open_case() {
  VaeCase c;
  auto files = ModelFiles::open(test::fixture("flux2/vae"));
  EXPECT_TRUE(files.is_ok()) << files.status().to_string();
  if (!files) return c;
  auto vae = AutoencoderKL::load(**files);
  EXPECT_TRUE(vae.is_ok()) << vae.status().to_string();
  if (!vae) return c;
  c.vae = std::move(*vae);
  auto stats = Flux2LatentStats::load(**files, c.vae->config().latent_channels);
  EXPECT_TRUE(stats.is_ok()) << stats.status().to_string();
  if (stats) c.stats = *stats;
  c.in = SafetensorsFile::open(test::fixture("flux2/vae/inputs.safetensors")).value();
  c.ex = SafetensorsFile::open(test::fixture("flux2/vae/expected.safetensors")).value();
  return c;
}

TEST(Flux2Vae, DecodesPackedTokensLikeThePipeline) {
  VaeCase c = open_case();
  ASSERT_TRUE(c.vae);
  const Tensor tokens = c.in->tensor("tokens").value();
  const Tensor expected = c.ex->tensor("decoded").value();
  const int64_t B = tokens.dim(0), C = c.vae->config().latent_channels;
  const int64_t h = expected.dim(2) / c.vae->config().downscale() / 2, w = expected.dim(3) / c.vae->config().downscale() / 2;
  ASSERT_EQ(tokens.dim(1), h * w);
  const auto tv = tokens.to_f32_vector();
  std::vector<float> lat(size_t(B * C * 4 * h * w));
  c.stats.tokens_to_latents(tv.data(), B, h, w, lat.data());
  ThreadPool pool(2);
  auto image = c.vae->decode_unscaled(Tensor(lat.data(), DType::kF32, {B, C, 2 * h, 2 * w}), pool);
  ASSERT_TRUE(image.is_ok()) << image.status().to_string();
  ASSERT_EQ(image->shape(), expected.shape());
  const std::vector<float> got(image->data_as<float>(), image->data_as<float>() + image->numel());
  const double rel = test::rel_l2(got, expected.to_f32_vector());
  std::printf("decode rel_l2 %.3g\n", rel);
  EXPECT_LE(rel, 1e-4);
}

TEST(Flux2Vae, EncodesReferenceImagesToNormalisedTokens) {
  VaeCase c = open_case();
  ASSERT_TRUE(c.vae);
  ASSERT_TRUE(c.vae->has_encoder());
  const Tensor image = c.in->tensor("image").value();
  const Tensor expected = c.ex->tensor("encoded_tokens").value();
  const auto iv = image.to_f32_vector();
  ThreadPool pool(2);
  auto mean = c.vae->encode_mean(Tensor(const_cast<float*>(iv.data()), DType::kF32, image.shape()), pool);
  ASSERT_TRUE(mean.is_ok()) << mean.status().to_string();
  const int64_t B = mean->dim(0), h = mean->dim(2) / 2, w = mean->dim(3) / 2;
  std::vector<float> tokens(size_t(B * h * w * 4 * mean->dim(1)));
  c.stats.latents_to_tokens(mean->data_as<float>(), B, h, w, tokens.data());
  ASSERT_EQ(int64_t(tokens.size()), expected.numel());
  const double rel = test::rel_l2(tokens, expected.to_f32_vector());
  std::printf("encode rel_l2 %.3g\n", rel);
  EXPECT_LE(rel, 1e-4);
}

TEST(Flux2Vae, StatisticsAreChecked) {
  auto files = ModelFiles::open(test::fixture("flux2/vae"));
  ASSERT_TRUE(files.is_ok());
  auto wrong = Flux2LatentStats::load(**files, 5);  // 20 channels asked for, 16 stored
  ASSERT_FALSE(wrong.is_ok());
  EXPECT_NE(wrong.status().to_string().find("bn.running_mean"), std::string::npos) << wrong.status().to_string();
}

}  // namespace
}  // namespace quill
