// The public API end to end: same pictures as the internal pipeline, deterministic per seed.
#include "quill/quill.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <filesystem>
#include <fstream>

#include "io/io_test_util.h"
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

TEST(ImageGenerator, RegistryNamesItsArchitecturesAndRefusesOthers) {
  const auto archs = ImageGenerator::architectures();
  ASSERT_FALSE(archs.empty());
  EXPECT_EQ(archs.front(), "SD3Transformer2DModel");
  // A VAE folder is no transformer: the error names the detected architecture and the file.
  auto r = ImageGenerator::open(test::fixture("pipeline/vae"), test::fixture("pipeline/vae"), 1);
  ASSERT_FALSE(r.is_ok());
  EXPECT_EQ(r.status().code(), ErrorCode::kUnsupported) << r.status().to_string();
  EXPECT_NE(r.status().to_string().find("AutoencoderKL"), std::string::npos) << r.status().to_string();
  EXPECT_NE(r.status().to_string().find("SD3Transformer2DModel"), std::string::npos) << r.status().to_string();
}

TEST(ImageGenerator, ReportsInfoProgressCancelsAndCountsVaeOps) {
  ImageGenerator::OpenOptions oo;
  oo.transformer = test::fixture("pipeline/transformer");
  oo.vae = test::fixture("pipeline/vae");
  oo.threads = 2;
  oo.device = DeviceChoice::kCpu;
  auto gen = ImageGenerator::open(oo);
  ASSERT_TRUE(gen.is_ok()) << gen.status().to_string();
  EXPECT_EQ((*gen)->info().architecture, "SD3Transformer2DModel");
  EXPECT_EQ((*gen)->info().device, "cpu");
  const auto cond = read(test::fixture("pipeline/cfg5/cond.safetensors"));
  ImageGenerator::Options o;
  o.width = o.height = 16;
  o.steps = 3;
  o.guidance_scale = 1.0f;
  std::vector<int> steps;
  o.on_step = [&](int s, int n) {
    EXPECT_EQ(n, 3);
    steps.push_back(s);
  };
  ASSERT_TRUE((*gen)->generate(cond, nullptr, o).is_ok());
  EXPECT_EQ(steps, (std::vector<int>{1, 2, 3}));
  const std::string ops = (*gen)->op_counts();
  EXPECT_NE(ops.find("conv2d: cpu="), std::string::npos) << ops;  // the VAE ran through the op layer
  EXPECT_NE(ops.find("group_norm: cpu="), std::string::npos) << ops;

  std::atomic<bool> cancel{false};
  o.cancel = &cancel;
  o.on_step = [&](int s, int) {
    if (s == 1) cancel = true;
  };
  auto r = (*gen)->generate(cond, nullptr, o);
  ASSERT_FALSE(r.is_ok());
  EXPECT_EQ(r.status().code(), ErrorCode::kCancelled) << r.status().to_string();
}

TEST(ImageGenerator, FromPromptsMatchesDiffusersWithTheEmptyNegative) {
  // klein base (CFG 4): prompts in, the empty negative made and cached by the generator.
  testing::TempDir dir;
  const std::string p = dir.file("klein");
  const std::string m = test::fixture("flux2/prompt_models");
  std::filesystem::create_directories(p);
  std::filesystem::copy(m + "/transformer", p + "/transformer", std::filesystem::copy_options::recursive);
  std::filesystem::copy(test::fixture("flux2/pipeline_models/vae"), p + "/vae", std::filesystem::copy_options::recursive);
  std::ofstream(p + "/model_index.json") << "{\"_class_name\": \"Flux2KleinPipeline\", \"is_distilled\": false}\n";
  ImageGenerator::OpenOptions oo;
  oo.transformer = p;
  oo.text_encoder = m + "/text_encoder";
  oo.tokenizer = test::fixture("tokenizer/tokenizer.json");
  oo.threads = 2;
  oo.device = DeviceChoice::kCpu;
  auto gen = ImageGenerator::open(oo);
  ASSERT_TRUE(gen.is_ok()) << gen.status().to_string();
  EXPECT_TRUE((*gen)->info().takes_prompts);
  const std::string f = test::fixture("flux2/prompt_base");
  ImageGenerator::Options o;
  o.width = o.height = 32;
  o.steps = 2;
  o.guidance_scale = 4.0f;
  o.initial_latents =
      SafetensorsFile::open(f + "/latents.safetensors").value()->tensor("latents").value().to_f32_vector();
  auto out = (*gen)->generate_from_prompts({"a red fox in snow"}, o);
  ASSERT_TRUE(out.is_ok()) << out.status().to_string();
  const auto want = SafetensorsFile::open(f + "/expected.safetensors").value()->tensor("image").value().to_f32_vector();
  ASSERT_EQ(out->rgb.size(), 1u);
  ASSERT_EQ(out->rgb[0].size(), want.size());
  // The API's 8-bit RGB (interleaved) against diffusers' [0, 1] image (planar CHW).
  int worst = 0;
  for (int64_t y = 0; y < 32; ++y)
    for (int64_t x = 0; x < 32; ++x)
      for (int64_t ch = 0; ch < 3; ++ch) {
        const int w = int(std::lround(want[size_t((ch * 32 + y) * 32 + x)] * 255.0f));
        worst = std::max(worst, std::abs(w - int(out->rgb[0][size_t((y * 32 + x) * 3 + ch)])));
      }
  EXPECT_LE(worst, 1);
  auto bad = (*gen)->generate_from_prompts({"a", "b"}, o, {"only one"});
  ASSERT_FALSE(bad.is_ok());
  EXPECT_NE(bad.status().message().find("one per prompt"), std::string::npos) << bad.status().to_string();
}

}  // namespace
}  // namespace quill
