// End to end against diffusers' StableDiffusion3Pipeline (tools/make_pipeline_fixtures.py):
// same transformer, VAE, initial latents and conditioning -> the same decoded image.
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>

#include <nlohmann/json.hpp>

#include "io/safetensors.h"
#include "pipeline/sd3_pipeline.h"
#include "support/test_util.h"

namespace quill {
namespace {

Result<SD3Conditioning> read_cond(const std::string& path) {
  QUILL_ASSIGN_OR_RETURN(auto f, SafetensorsFile::open(path));
  QUILL_ASSIGN_OR_RETURN(Tensor e, f->tensor("encoder_hidden_states"));
  QUILL_ASSIGN_OR_RETURN(Tensor p, f->tensor("pooled_projections"));
  return SD3Conditioning{e.to_f32_vector(), p.to_f32_vector()};
}

class SD3Pipeline : public ::testing::TestWithParam<const char*> {};

TEST_P(SD3Pipeline, MatchesDiffusersPipeline) {
  const std::string dir = test::fixture(std::string("pipeline/") + GetParam());
  nlohmann::json meta;
  std::ifstream(dir + "/meta.json") >> meta;
  ThreadPool pool(2);
  auto engine = open_sd3_engine(test::fixture("pipeline/transformer"), pool);
  ASSERT_TRUE(engine.is_ok()) << engine.status().to_string();
  auto vae_files = ModelFiles::open(test::fixture("pipeline/vae"));
  ASSERT_TRUE(vae_files.is_ok()) << vae_files.status().to_string();
  auto vae = AutoencoderKL::load(**vae_files);
  ASSERT_TRUE(vae.is_ok()) << vae.status().to_string();
  auto cond = read_cond(dir + "/cond.safetensors");
  auto neg = read_cond(dir + "/negative.safetensors");
  ASSERT_TRUE(cond.is_ok() && neg.is_ok());
  auto lat = SafetensorsFile::open(dir + "/latents.safetensors");
  ASSERT_TRUE(lat.is_ok());
  const Tensor lt = (*lat)->tensor("latents").value();
  const std::vector<float> latents = lt.to_f32_vector();
  const auto expected = SafetensorsFile::open(dir + "/expected.safetensors").value()->tensor("image").value();

  SD3GenerateRequest r;
  r.batch = lt.dim(0);
  r.height = meta["height"];
  r.width = meta["width"];
  r.text_len = int64_t(cond->encoder_hidden_states.size()) / (r.batch * 32);
  r.cond = &*cond;
  r.negative = &*neg;
  r.steps = meta["steps"];
  r.guidance_scale = meta["guidance"];
  r.shift = meta["shift"];
  r.initial_latents = &latents;
  auto image = sd3_generate(**engine, **vae, r);
  ASSERT_TRUE(image.is_ok()) << image.status().to_string();
  ASSERT_EQ(image->shape(), expected.shape());
  // VaeImageProcessor.postprocess(output_type="pt"): clamp(x / 2 + 0.5, 0, 1).
  std::vector<float> unit = image->to_f32_vector();
  for (float& v : unit) v = std::clamp(v * 0.5f + 0.5f, 0.0f, 1.0f);
  const double rel = test::rel_l2(unit, expected.to_f32_vector());
  EXPECT_LE(rel, 1e-3) << GetParam() << " rel " << rel;
  // CFG ran as one batch-2B forward per step: one plan, built once.
  EXPECT_EQ((*engine)->plan_stats().builds, 1u);
  EXPECT_EQ((*engine)->plan_stats().hits + 1, uint64_t(r.steps));
  if (r.guidance_scale > 1) {
    EXPECT_TRUE((*engine)->plan(SD3Bucket{2 * r.batch, r.height / 2, r.width / 2, r.text_len}).is_ok());
  }
}

INSTANTIATE_TEST_SUITE_P(Fixtures, SD3Pipeline, ::testing::Values("cfg5", "cfg2"));

}  // namespace
}  // namespace quill
