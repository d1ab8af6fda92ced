// The whole Flux2KleinPipeline from a text prompt against diffusers (tools/make_flux2_fixtures.py
// --case prompt): chat template + BPE tokenizer + Qwen3 encoder -> prompt_embeds, then the
// distilled and the base (CFG against the empty prompt) images.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <fstream>

#include "io/safetensors.h"
#include "pipeline/flux2_prompt.h"
#include "support/test_util.h"

namespace quill {
namespace {

class Flux2Prompt : public ::testing::TestWithParam<const char*> {};

TEST_P(Flux2Prompt, ImageFromAPromptMatchesDiffusers) {
  const std::string dir = test::fixture(std::string("flux2/") + GetParam());
  const std::string models = test::fixture("flux2/prompt_models");
  nlohmann::json meta;
  std::ifstream(dir + "/meta.json") >> meta;
  ThreadPool pool(2);
  auto enc = Flux2PromptEncoder::open(models + "/text_encoder", test::fixture("tokenizer/tokenizer.json"), pool);
  ASSERT_TRUE(enc.is_ok()) << enc.status().to_string();
  auto cond = (*enc)->encode({meta["prompt"].get<std::string>()}, meta["max_sequence_length"]);
  ASSERT_TRUE(cond.is_ok()) << cond.status().to_string();
  auto ex = SafetensorsFile::open(dir + "/expected.safetensors").value();
  const double embeds_rel = test::rel_l2(cond->prompt_embeds, ex->tensor("prompt_embeds").value().to_f32_vector());
  std::printf("%s prompt_embeds rel_l2 %.3g\n", GetParam(), embeds_rel);
  EXPECT_LE(embeds_rel, 1e-4);

  auto engine = open_engine<Flux2Transformer>(models + "/transformer", pool);
  ASSERT_TRUE(engine.is_ok()) << engine.status().to_string();
  auto vae_files = ModelFiles::open(test::fixture("flux2/pipeline_models/vae")).value();
  auto vae = AutoencoderKL::load(*vae_files).value();
  auto stats = Flux2LatentStats::load(*vae_files, vae->config().latent_channels).value();
  const auto latents =
      SafetensorsFile::open(dir + "/latents.safetensors").value()->tensor("latents").value().to_f32_vector();
  Flux2Conditioning negative;
  Flux2GenerateRequest r;
  r.height = meta["height"];
  r.width = meta["width"];
  r.cond = &*cond;
  r.steps = meta["steps"];
  r.guidance_scale = meta["guidance_scale"];
  r.distilled = meta["is_distilled"];
  r.initial_latents = &latents;
  if (!r.distilled) {
    auto n = (*enc)->encode({""}, meta["max_sequence_length"]);
    ASSERT_TRUE(n.is_ok()) << n.status().to_string();
    negative = std::move(*n);
    r.negative = &negative;
  }
  auto image = flux2_generate(**engine, *vae, stats, r);
  ASSERT_TRUE(image.is_ok()) << image.status().to_string();
  const auto want = ex->tensor("image").value().to_f32_vector();
  std::vector<float> got(want.size());
  for (size_t i = 0; i < got.size(); ++i) got[i] = std::clamp(image->data_as<float>()[i] / 2.0f + 0.5f, 0.0f, 1.0f);
  const double rel = test::rel_l2(got, want);
  std::printf("%s image rel_l2 %.3g\n", GetParam(), rel);
  EXPECT_LE(rel, 1e-3);
}

INSTANTIATE_TEST_SUITE_P(Fixtures, Flux2Prompt, ::testing::Values("prompt_distilled", "prompt_base"),
                         [](const auto& info) { return std::string(info.param); });

TEST(Flux2Prompt, KleinChatTemplateText) {
  EXPECT_EQ(klein_chat_prompt("a fox"),
            "<|im_start|>user\na fox<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n");
}

}  // namespace
}  // namespace quill
