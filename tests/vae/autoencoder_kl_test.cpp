// AutoencoderKL against diffusers (fixtures from tools/make_vae_fixtures.py): decode, tiled
// decode, encode and the 8-bit conversion, on every convolution path.
#include <gtest/gtest.h>

#include <cstdio>

#include "backend/cpu/conv2d.h"
#include "io/model_files.h"
#include "io/safetensors.h"
#include "models/autoencoder_kl.h"
#include "pipeline/image_postprocess.h"
#include "support/test_util.h"

namespace quill {
namespace {

using test::fixture;
using test::rel_l2;

ThreadPool& pool() {
  static ThreadPool p(2);
  return p;
}

struct Fixture {
  std::unique_ptr<AutoencoderKL> vae;
  std::shared_ptr<SafetensorsFile> io;
  Tensor get(const std::string& name) const {
    auto t = io->tensor(name);
    EXPECT_TRUE(t.is_ok()) << t.status().to_string();
    return t.is_ok() ? *t : Tensor();
  }
  std::vector<float> vec(const std::string& name) const { return get(name).to_f32_vector(); }
};

Fixture open(const std::string& name) {
  Fixture f;
  auto files = ModelFiles::open(fixture("vae/" + name));
  EXPECT_TRUE(files.is_ok()) << files.status().to_string();
  if (!files.is_ok()) return f;
  auto vae = AutoencoderKL::load(**files);
  EXPECT_TRUE(vae.is_ok()) << vae.status().to_string();
  if (vae.is_ok()) f.vae = std::move(*vae);
  auto io = SafetensorsFile::open(fixture("vae/" + name + "_io.safetensors"));
  EXPECT_TRUE(io.is_ok()) << io.status().to_string();
  if (io.is_ok()) f.io = *io;
  return f;
}

std::string sci(double v) {
  char b[32];
  std::snprintf(b, sizeof b, "%.2e", v);
  return b;
}

std::vector<float> values(const Tensor& t) {
  return std::vector<float>(t.data_as<float>(), t.data_as<float>() + t.numel());
}

class ConvPaths : public ::testing::TestWithParam<cpu::ConvImpl> {
 protected:
  void SetUp() override { cpu::set_conv2d_default_impl(GetParam()); }
  void TearDown() override { cpu::set_conv2d_default_impl(cpu::ConvImpl::kAuto); }
};

TEST_P(ConvPaths, TinyDecodeMatchesDiffusers) {
  auto f = open("tiny");
  ASSERT_TRUE(f.vae && f.io);
  EXPECT_TRUE(f.vae->has_encoder());
  auto img = f.vae->decode(f.get("decode_latents"), pool());
  ASSERT_TRUE(img.is_ok()) << img.status().to_string();
  EXPECT_EQ(img->shape(), Shape({2, 3, 10, 14}));
  const double err = rel_l2(values(*img), f.vec("decode_image"));
  EXPECT_LT(err, 1e-4);
  RecordProperty("rel_l2", sci(err));
}

// Each decode size gets one plan (an arena of activations), reused by later decodes of that size
// with the same result; the VAE's ops go through the caller's dispatcher.
TEST(AutoencoderKL, PlansOncePerSizeAndCountsItsOps) {
  auto f = open("tiny");
  ASSERT_TRUE(f.vae && f.io);
  EXPECT_EQ(f.vae->plan_count(), 0u);
  auto a = f.vae->decode(f.get("decode_latents"), pool());
  auto b = f.vae->decode(f.get("decode_latents"), pool());
  ASSERT_TRUE(a.is_ok() && b.is_ok());
  EXPECT_EQ(f.vae->plan_count(), 1u);
  EXPECT_EQ(values(*a), values(*b));
  auto cpu = make_cpu_backend(pool());
  Dispatcher ops(cpu.get());
  ASSERT_TRUE(f.vae->decode(f.get("tiled_latents"), ops).is_ok());
  EXPECT_EQ(f.vae->plan_count(), 2u);
  EXPECT_GT(ops.stats().runs_of(OpKind::kConv2d, Device::kCPU), 0u);
  EXPECT_GT(ops.stats().runs_of(OpKind::kGroupNorm, Device::kCPU), 0u);
  EXPECT_GT(ops.stats().runs_of(OpKind::kUpsample, Device::kCPU), 0u);
  EXPECT_EQ(ops.stats().total(Device::kCUDA), 0u);
}

TEST_P(ConvPaths, TinyTiledDecodeMatchesDiffusers) {
  auto f = open("tiny");
  ASSERT_TRUE(f.vae && f.io);
  VaeTiling tiling;
  tiling.enabled = true;  // sample_size 16: 8x8 latent tiles every 6, blended over 4 pixels
  auto img = f.vae->decode(f.get("tiled_latents"), pool(), tiling);
  ASSERT_TRUE(img.is_ok()) << img.status().to_string();
  EXPECT_EQ(img->shape(), Shape({1, 3, 26, 42}));
  const auto ref = f.vec("tiled_image");
  const double err = rel_l2(values(*img), ref);
  EXPECT_LT(err, 1e-4);
  RecordProperty("rel_l2", sci(err));
  // Tiling changes the result, so agreeing with the tiled reference says the tiled path ran.
  EXPECT_GT(rel_l2(f.vec("tiled_untiled_image"), ref), 1e-2);
  auto whole = f.vae->decode(f.get("tiled_latents"), pool());
  ASSERT_TRUE(whole.is_ok());
  EXPECT_LT(rel_l2(values(*whole), f.vec("tiled_untiled_image")), 1e-4);
}

TEST_P(ConvPaths, TinyEncodeMeanMatchesDiffusers) {
  auto f = open("tiny");
  ASSERT_TRUE(f.vae && f.io);
  auto mean = f.vae->encode_mean(f.get("encode_image"), pool());
  ASSERT_TRUE(mean.is_ok()) << mean.status().to_string();
  EXPECT_EQ(mean->shape(), Shape({1, 4, 8, 11}));
  const double err = rel_l2(values(*mean), f.vec("encode_mean"));
  EXPECT_LT(err, 1e-4);
  RecordProperty("rel_l2", sci(err));
}

TEST_P(ConvPaths, Sd3LayoutDecodeMatchesDiffusers) {
  auto f = open("sd3_layout");  // f16 weights, decoder only, no (post_)quant_conv
  ASSERT_TRUE(f.vae && f.io);
  EXPECT_FALSE(f.vae->has_encoder());
  EXPECT_EQ(f.vae->config().downscale(), 8);
  auto img = f.vae->decode(f.get("decode_latents"), pool());
  ASSERT_TRUE(img.is_ok()) << img.status().to_string();
  EXPECT_EQ(img->shape(), Shape({1, 3, 32, 40}));
  const double err = rel_l2(values(*img), f.vec("decode_image"));
  EXPECT_LT(err, 1e-4);
  RecordProperty("rel_l2", sci(err));
}

INSTANTIATE_TEST_SUITE_P(Vae, ConvPaths,
                         ::testing::Values(cpu::ConvImpl::kAuto, cpu::ConvImpl::kGemm, cpu::ConvImpl::kPortable),
                         [](const auto& info) {
                           switch (info.param) {
                             case cpu::ConvImpl::kGemm:
                               return std::string("im2col_gemm");
                             case cpu::ConvImpl::kPortable:
                               return std::string("portable");
                             default:
                               return std::string(cpu::conv2d_have_dnnl() ? "onednn" : "auto");
                           }
                         });

TEST(Vae, ImageToU8MatchesVaeImageProcessor) {
  auto io = SafetensorsFile::open(fixture("vae/tiny_io.safetensors"));
  ASSERT_TRUE(io.is_ok()) << io.status().to_string();
  auto img = (*io)->tensor("rgb_image"), ref = (*io)->tensor("rgb_u8");
  ASSERT_TRUE(img.is_ok() && ref.is_ok());
  ASSERT_EQ(ref->dtype(), DType::kU8);
  const int64_t H = img->dim(2), W = img->dim(3);
  const auto got = image_to_u8(img->data_as<float>(), 3, H, W);
  ASSERT_EQ(int64_t(got.size()), ref->numel());
  int mismatches = 0;
  for (size_t i = 0; i < got.size(); ++i) mismatches += got[i] != ref->data_as<uint8_t>()[i];
  EXPECT_EQ(mismatches, 0);
}

TEST(Vae, DecodeRejectsWrongLatentChannels) {
  auto f = open("tiny");
  ASSERT_TRUE(f.vae);
  Tensor z = Tensor::empty(DType::kF32, {1, 5, 4, 4});
  auto img = f.vae->decode(z, pool());
  ASSERT_FALSE(img.is_ok());
  EXPECT_EQ(img.status().code(), ErrorCode::kInvalidArgument);
  EXPECT_FALSE(f.vae->decode(Tensor::empty(DType::kF16, {1, 4, 4, 4}), pool()).is_ok());
}

TEST(Vae, MissingWeightIsNamed) {
  AutoencoderKLConfig cfg;
  cfg.block_out_channels = {8, 16};
  cfg.norm_num_groups = 4;
  auto files = ModelFiles::open(fixture("vae/tiny"));
  ASSERT_TRUE(files.is_ok());
  const VaeWeightSource src = [&](const std::string& name, const Shape& s) -> Result<Tensor> {
    if (name == "decoder.up_blocks.1.resnets.1.conv2.bias") return not_found("no tensor '", name, "'");
    return (*files)->get(name, s);
  };
  auto vae = AutoencoderKL::load(cfg, src, false);
  ASSERT_FALSE(vae.is_ok());
  EXPECT_NE(vae.status().to_string().find("decoder.up_blocks.1.resnets.1.conv2.bias"), std::string::npos);
  cfg.block_out_channels = {8, 32};  // shapes no longer match the file
  vae = AutoencoderKL::load(cfg, src, false);
  ASSERT_FALSE(vae.is_ok());
  EXPECT_NE(vae.status().to_string().find("expected"), std::string::npos) << vae.status().to_string();
}

TEST(Vae, ConfigRejectsUnsupported) {
  auto j = nlohmann::json::parse(R"({"block_out_channels": [8, 16], "norm_num_groups": 4,
      "up_block_types": ["UpDecoderBlock2D", "AttnUpDecoderBlock2D"]})");
  EXPECT_EQ(AutoencoderKLConfig::from_json(j).status().code(), ErrorCode::kUnsupported);
  j = nlohmann::json::parse(R"({"block_out_channels": [8, 12], "norm_num_groups": 8})");
  EXPECT_EQ(AutoencoderKLConfig::from_json(j).status().code(), ErrorCode::kInvalidFile);
  j = nlohmann::json::parse(R"({"block_out_channels": [8, 16], "norm_num_groups": 4, "shift_factor": null,
      "sample_size": [64, 64]})");
  auto c = AutoencoderKLConfig::from_json(j);
  ASSERT_TRUE(c.is_ok()) << c.status().to_string();
  EXPECT_EQ(c->shift_factor, 0.0);
  EXPECT_EQ(c->sample_size, 64);
  // Checked numbers: a float in an integer list, an out-of-range channel count, a string scale.
  for (const char* bad : {R"({"block_out_channels": [8, 16.5]})", R"({"latent_channels": 1e30})",
                          R"({"scaling_factor": "0.18"})"}) {
    auto r = AutoencoderKLConfig::from_json(nlohmann::json::parse(bad));
    ASSERT_FALSE(r.is_ok()) << bad;
    EXPECT_NE(r.status().to_string().find("AutoencoderKL config key '"), std::string::npos) << r.status().to_string();
  }
  auto list = AutoencoderKLConfig::from_json(nlohmann::json::parse(R"({"block_out_channels": [8, 16.5]})"));
  EXPECT_NE(list.status().to_string().find("must be a list, each an integer in range, got [8,16.5]"), std::string::npos)
      << list.status().to_string();
}

TEST(Vae, BenchCommandRunsOnAModelFolder) {
  const std::string cmd = std::string(QUILL_CLI_PATH) + " bench-vae --model " + fixture("vae/tiny") +
                          " --height 48 --width 40 --tiling --tile-size 16 2>&1";
  FILE* p = popen(cmd.c_str(), "r");
  ASSERT_NE(p, nullptr);
  std::string out;
  char buf[256];
  while (fgets(buf, sizeof buf, p)) out += buf;
  EXPECT_EQ(pclose(p), 0) << out;
  EXPECT_NE(out.find("f32[1, 3, 48, 40]"), std::string::npos) << out;
  EXPECT_NE(out.find("\"peak_rss_mib\""), std::string::npos) << out;
}

}  // namespace
}  // namespace quill
