// The whole Flux2KleinPipeline from prompt embeddings against diffusers
// (tools/make_flux2_fixtures.py pipeline_*): scheduler with the empirical mu, the denoising loop
// (distilled: no CFG; base: CFG with a negative prompt of another length), latent
// de-normalisation and the VAE decode.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <fstream>

#include "io/safetensors.h"
#include "pipeline/flux2_pipeline.h"
#include "support/test_util.h"

namespace quill {
namespace {

Flux2Conditioning read_embeds(const SafetensorsFile& f, const std::string& name) {
  const Tensor t = f.tensor(name).value();
  return {t.to_f32_vector(), t.dim(0), t.dim(1)};
}

class Flux2Pipeline : public ::testing::TestWithParam<const char*> {};

TEST_P(Flux2Pipeline, MatchesDiffusers) {
  const std::string dir = test::fixture(std::string("flux2/") + GetParam());
  nlohmann::json meta, sched;
  std::ifstream(dir + "/meta.json") >> meta;
  const std::string models = test::fixture("flux2/pipeline_models");
  std::ifstream(models + "/scheduler/scheduler_config.json") >> sched;
  ThreadPool pool(2);
  auto engine = open_engine<Flux2Transformer>(models + "/transformer", pool);
  ASSERT_TRUE(engine.is_ok()) << engine.status().to_string();
  auto vae_files = ModelFiles::open(models + "/vae").value();
  auto vae = AutoencoderKL::load(*vae_files);
  ASSERT_TRUE(vae.is_ok()) << vae.status().to_string();
  auto stats = Flux2LatentStats::load(*vae_files, (*vae)->config().latent_channels);
  ASSERT_TRUE(stats.is_ok()) << stats.status().to_string();
  auto scheduler = FlowMatchEulerConfig::from_json(sched);
  ASSERT_TRUE(scheduler.is_ok()) << scheduler.status().to_string();

  auto cond_file = SafetensorsFile::open(dir + "/cond.safetensors").value();
  const Flux2Conditioning cond = read_embeds(*cond_file, "prompt_embeds");
  Flux2Conditioning negative;
  const bool has_negative = cond_file->find("negative_prompt_embeds") != nullptr;
  if (has_negative) negative = read_embeds(*cond_file, "negative_prompt_embeds");
  const std::vector<float> latents =
      SafetensorsFile::open(dir + "/latents.safetensors").value()->tensor("latents").value().to_f32_vector();

  Flux2GenerateRequest r;
  r.height = meta["height"];
  r.width = meta["width"];
  r.cond = &cond;
  r.negative = has_negative ? &negative : nullptr;
  r.steps = meta["steps"];
  r.guidance_scale = meta["guidance_scale"];
  r.distilled = meta["is_distilled"];
  r.scheduler = *scheduler;
  r.initial_latents = &latents;
  auto image = flux2_generate(**engine, **vae, *stats, r);
  ASSERT_TRUE(image.is_ok()) << image.status().to_string();

  const Tensor expected =
      SafetensorsFile::open(dir + "/expected.safetensors").value()->tensor("image").value();
  ASSERT_EQ(image->shape(), expected.shape());
  std::vector<float> got(size_t(image->numel()));
  for (size_t i = 0; i < got.size(); ++i)  // output_type="pt": (x / 2 + 0.5).clamp(0, 1)
    got[i] = std::clamp(image->data_as<float>()[i] / 2.0f + 0.5f, 0.0f, 1.0f);
  const double rel = test::rel_l2(got, expected.to_f32_vector());
  std::printf("%s rel_l2 %.3g\n", GetParam(), rel);
  EXPECT_LE(rel, 1e-3);
}

INSTANTIATE_TEST_SUITE_P(Fixtures, Flux2Pipeline, ::testing::Values("pipeline_distilled", "pipeline_base",
                                                                       "pipeline_base_batched"),
                         [](const auto& info) { return std::string(info.param); });

TEST(Flux2Schedule, EmpiricalMuMatchesDiffusers) {
  nlohmann::json rows;
  std::ifstream(test::fixture("flux2/empirical_mu.json")) >> rows;
  ASSERT_GE(rows.size(), 20u);
  for (const auto& row : rows)
    EXPECT_NEAR(flux2_empirical_mu(row["image_seq_len"], row["num_steps"]), row["mu"].get<double>(), 1e-12)
        << row.dump();
}

}  // namespace
}  // namespace quill
