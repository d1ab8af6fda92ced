// `quill generate` with a FLUX.2 transformer: the pipeline is picked from the detected
// architecture, the mode (distilled or base) from the pipeline folder's model_index.json, and the
// PNG agrees with diffusers' Flux2KleinPipeline image (tests/fixtures/flux2/pipeline_*).
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>

#include "io/image.h"
#include "io/io_test_util.h"
#include "io/safetensors.h"
#include "support/cli_run.h"
#include "support/test_util.h"

namespace quill {
namespace {

namespace fs = std::filesystem;
using test::CliRun;
using test::quill_cli;

// A diffusers-style pipeline folder around the fixture models, distilled or not.
std::string pipeline_folder(const testing::TempDir& dir, bool distilled) {
  const std::string p = dir.file("klein");
  fs::copy(test::fixture("flux2/pipeline_models"), p, fs::copy_options::recursive);
  std::ofstream(p + "/model_index.json") << "{\"_class_name\": \"Flux2KleinPipeline\", \"is_distilled\": "
                                         << (distilled ? "true" : "false") << "}\n";
  return p;
}

// Pixels of `png` against diffusers' image [B, 3, H, W] in [0, 1], item `b`: max abs difference in 8-bit steps.
int max_lsb_difference(const std::string& png, const std::string& expected_file, int64_t b) {
  auto img = read_image(png);
  EXPECT_TRUE(img.is_ok()) << img.status().to_string();
  if (!img) return 255;
  const Tensor ex = SafetensorsFile::open(expected_file).value()->tensor("image").value();
  const auto v = ex.to_f32_vector();
  const int64_t H = ex.dim(2), W = ex.dim(3);
  EXPECT_EQ(img->height, H);
  EXPECT_EQ(img->width, W);
  int worst = 0;
  for (int64_t c = 0; c < 3; ++c)
    for (int64_t y = 0; y < H; ++y)
      for (int64_t x = 0; x < W; ++x) {
        const float want = v[size_t(((b * 3 + c) * H + y) * W + x)] * 255.0f;
        const int got = img->pixels[size_t((y * W + x) * 3 + c)];
        worst = std::max(worst, int(std::ceil(std::fabs(float(got) - want) - 0.5f)));
      }
  return worst;
}

TEST(GenerateFlux2Cli, DistilledKleinMatchesDiffusersPixels) {
  testing::TempDir dir;
  const std::string p = pipeline_folder(dir, true);
  const std::string f = test::fixture("flux2/pipeline_distilled");
  CliRun r = quill_cli("generate --model '" + p + "/transformer' --vae '" + p + "/vae' --cond '" + f +
                           "/cond.safetensors' --latents '" + f +
                           "/latents.safetensors' --width 32 --height 32 --steps 3 --device cpu -o '" +
                           dir.file("d.png") + "'",
                       dir);
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("CFG off"), std::string::npos) << r.out;
  for (int64_t b = 0; b < 2; ++b)
    EXPECT_LE(max_lsb_difference(dir.file(b == 0 ? "d_0001.png" : "d_0002.png"), f + "/expected.safetensors", b), 1);
}

TEST(GenerateFlux2Cli, BaseKleinRunsGuidanceWithTheNegativeFromTheSameFile) {
  testing::TempDir dir;
  const std::string p = pipeline_folder(dir, false);
  const std::string f = test::fixture("flux2/pipeline_base");
  CliRun r = quill_cli("generate --model '" + p + "/transformer' --vae '" + p + "/vae' --cond '" + f +
                           "/cond.safetensors' --latents '" + f +
                           "/latents.safetensors' --width 48 --height 32 --steps 4 --cfg 3.5 --device cpu -o '" +
                           dir.file("b.png") + "'",
                       dir);
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("CFG on"), std::string::npos) << r.out;
  EXPECT_LE(max_lsb_difference(dir.file("b.png"), f + "/expected.safetensors", 0), 1);
}

TEST(GenerateFlux2Cli, ModeDefaultsAndMisuseAreExplained) {
  testing::TempDir dir;
  const std::string p = pipeline_folder(dir, true);
  const std::string cond = test::fixture("flux2/pipeline_distilled/cond.safetensors");
  const std::string base = "generate --model '" + p + "/transformer' --vae '" + p + "/vae' --cond '" + cond +
                           "' --height 32 --device cpu -o '" + dir.file("x.png") + "' ";
  CliRun r = quill_cli(base + "--width 32 --cfg 4", dir);  // distilled: guidance ignored, with a warning
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.err.find("--cfg 4 is ignored: this model is guidance-distilled"), std::string::npos) << r.err;
  EXPECT_NE(r.out.find("(4 steps"), std::string::npos) << r.out;  // klein distilled default

  r = quill_cli(base + "--width 32 --shift 3", dir);
  EXPECT_EQ(r.code, 2) << r.err;
  EXPECT_NE(r.err.find("--shift is SD3's static shift"), std::string::npos) << r.err;

  r = quill_cli(base + "--width 30", dir);
  EXPECT_EQ(r.code, 2) << r.err;
  EXPECT_NE(r.err.find("multiple of 4"), std::string::npos) << r.err;

  // An SD3 VAE has no BatchNorm statistics: named, not a crash or a garbage image.
  r = quill_cli("generate --model '" + p + "/transformer' --vae '" + test::fixture("pipeline/vae") + "' --cond '" +
                    cond + "' --width 32 --height 32 --device cpu -o '" + dir.file("v.png") + "'",
                dir);
  EXPECT_NE(r.code, 0);
  EXPECT_NE(r.err.find("bn.running_mean"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(dir.file("v.png")));
}

TEST(GenerateFlux2Cli, TernaryGgufFromQuillQuantizeRuns) {
  // flux2/q128 (in_channels 16 = 4 x the tiny VAE's 4 latent channels) quantized to tq2_0_g128 by
  // the CLI, then a 3-step image from the GGUF, distilled mode from the model_index.json beside it.
  testing::TempDir dir;
  const std::string gguf = dir.file("klein-tq2.gguf");
  CliRun q = quill_cli("quantize '" + test::fixture("flux2/q128") + "' '" + gguf + "' --type tq2_0_g128", dir);
  ASSERT_EQ(q.code, 0) << q.err;
  std::ofstream(dir.file("model_index.json")) << "{\"is_distilled\": true}\n";
  std::vector<float> embeds(size_t(1 * 6 * 128));
  for (size_t i = 0; i < embeds.size(); ++i) embeds[i] = float((i * 37) % 17) / 8.0f - 1.0f;
  ASSERT_TRUE(write_safetensors(dir.file("cond.safetensors"),
                                {{"prompt_embeds", Tensor(embeds.data(), DType::kF32, {1, 6, 128})}}, {})
                  .is_ok());
  CliRun r = quill_cli("generate --model '" + gguf + "' --vae '" + test::fixture("flux2/pipeline_models/vae") +
                           "' --cond '" + dir.file("cond.safetensors") +
                           "' --width 32 --height 32 --steps 3 --device cpu --diag -o '" + dir.file("t.png") + "'",
                       dir);
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("(3 steps"), std::string::npos) << r.out;
  auto img = read_image(dir.file("t.png"));
  ASSERT_TRUE(img.is_ok()) << img.status().to_string();
  EXPECT_EQ(img->width, 32);
}

TEST(GenerateFlux2Cli, ForwardRunsFlux2ByArchitecture) {
  testing::TempDir dir;
  const std::string f = test::fixture("flux2/reference");
  CliRun r = quill_cli("forward --model '" + f + "' --inputs '" + f + "/inputs.safetensors' --device cpu -o '" +
                           dir.file("o.safetensors") + "'",
                       dir);
  ASSERT_EQ(r.code, 0) << r.err;
  const auto got = SafetensorsFile::open(dir.file("o.safetensors")).value()->tensor("sample").value().to_f32_vector();
  const auto want = SafetensorsFile::open(f + "/expected.safetensors").value()->tensor("sample").value().to_f32_vector();
  EXPECT_LE(test::rel_l2(got, want), 1e-4);
  // Missing ids are named, with what the file should hold.
  CliRun bad = quill_cli("forward --model '" + f + "' --inputs '" + test::fixture("flux2/pipeline_distilled/cond.safetensors") +
                             "' --device cpu -o '" + dir.file("x.safetensors") + "'",
                         dir);
  EXPECT_EQ(bad.code, 2) << bad.err;
  EXPECT_NE(bad.err.find("img_ids [N,4]"), std::string::npos) << bad.err;
}

// A klein pipeline folder with a text encoder and tokenizer: `quill generate --model DIR --prompt`.
std::string prompt_pipeline_folder(const testing::TempDir& dir, bool distilled) {
  const std::string p = dir.file("klein-prompt");
  const std::string m = test::fixture("flux2/prompt_models");
  fs::create_directories(p + "/tokenizer");
  fs::copy(m + "/transformer", p + "/transformer", fs::copy_options::recursive);
  fs::copy(m + "/text_encoder", p + "/text_encoder", fs::copy_options::recursive);
  fs::copy(test::fixture("flux2/pipeline_models/vae"), p + "/vae", fs::copy_options::recursive);
  fs::copy(test::fixture("tokenizer/tokenizer.json"), p + "/tokenizer/tokenizer.json");
  fs::copy(m + "/tokenizer_config.json", p + "/tokenizer/tokenizer_config.json");
  std::ofstream(p + "/model_index.json") << "{\"_class_name\": \"Flux2KleinPipeline\", \"is_distilled\": "
                                         << (distilled ? "true" : "false") << "}\n";
  return p;
}

TEST(GenerateFlux2Cli, FromAPromptWithNoPrecomputedTensorsMatchesDiffusers) {
  for (const bool distilled : {true, false}) {
    testing::TempDir dir;
    const std::string p = prompt_pipeline_folder(dir, distilled);
    const std::string f = test::fixture(distilled ? "flux2/prompt_distilled" : "flux2/prompt_base");
    const std::string args = distilled ? " --steps 3" : " --steps 2 --cfg 4";
    CliRun r = quill_cli("generate --model '" + p + "' --prompt 'a red fox in snow'" + args + " --latents '" + f +
                             "/latents.safetensors' --width 32 --height 32 --device cpu --diag -o '" +
                             dir.file("fox.png") + "'",
                         dir);
    ASSERT_EQ(r.code, 0) << r.err;
    EXPECT_NE(r.out.find("text encoder ops:"), std::string::npos) << r.out;
    EXPECT_LE(max_lsb_difference(dir.file("fox.png"), f + "/expected.safetensors", 0), 1) << distilled;
  }
  // The command: a pipeline folder and a prompt, nothing else (seeded noise, model defaults).
  testing::TempDir dir;
  const std::string p = prompt_pipeline_folder(dir, true);
  CliRun r = quill_cli("generate --model '" + p + "' --prompt 'a red fox in snow' --steps 4 -o '" + dir.file("x.png") + "'", dir);
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_TRUE(fs::exists(dir.file("x.png")));
  // Misuse is explained.
  CliRun both = quill_cli("generate --model '" + p + "' --prompt fox --cond '" +
                              test::fixture("flux2/pipeline_distilled/cond.safetensors") + "' -o '" + dir.file("y.png") + "'",
                          dir);
  EXPECT_EQ(both.code, 2);
  EXPECT_NE(both.err.find("exactly one of --prompt"), std::string::npos) << both.err;
}

TEST(GenerateFlux2Cli, EncodePromptWritesDiffusersPromptEmbeds) {
  testing::TempDir dir;
  const std::string p = prompt_pipeline_folder(dir, true);
  CliRun r = quill_cli("encode-prompt --model '" + p + "' --prompt 'a red fox in snow' --negative-prompt '' -o '" +
                           dir.file("e.safetensors") + "'",
                       dir);
  ASSERT_EQ(r.code, 0) << r.err;
  auto f = SafetensorsFile::open(dir.file("e.safetensors")).value();
  const auto got = f->tensor("prompt_embeds").value().to_f32_vector();
  const auto want = SafetensorsFile::open(test::fixture("flux2/prompt_distilled/expected.safetensors"))
                        .value()
                        ->tensor("prompt_embeds")
                        .value()
                        .to_f32_vector();
  EXPECT_LE(test::rel_l2(got, want), 1e-4);
  EXPECT_NE(f->find("negative_prompt_embeds"), nullptr);
  CliRun missing = quill_cli("encode-prompt --prompt x -o '" + dir.file("f.safetensors") + "'", dir);
  EXPECT_EQ(missing.code, 2) << missing.err;
}

TEST(GenerateFlux2Cli, LlamaCppGgufTextEncoderCarriesItsTokenizer) {
  // The prompt fixture's encoder as a llama.cpp-style GGUF (bf16, tokenizer in tokenizer.ggml.*,
  // tools/make_gguf_text_fixtures.py): no --tokenizer needed.
  testing::TempDir dir;
  const std::string gguf = test::fixture("flux2/prompt_models/text_encoder.gguf");
  CliRun r = quill_cli("encode-prompt --text-encoder '" + gguf + "' --prompt 'a red fox in snow' -o '" +
                           dir.file("e.safetensors") + "'",
                       dir);
  ASSERT_EQ(r.code, 0) << r.err;
  const auto got = SafetensorsFile::open(dir.file("e.safetensors")).value()->tensor("prompt_embeds").value().to_f32_vector();
  const auto want = SafetensorsFile::open(test::fixture("flux2/prompt_distilled/expected.safetensors"))
                        .value()
                        ->tensor("prompt_embeds")
                        .value()
                        .to_f32_vector();
  std::printf("bf16 GGUF text encoder: prompt_embeds rel_l2 %.3g, cosine %.6f\n", test::rel_l2(got, want),
              test::cosine(got, want));
  EXPECT_LE(test::rel_l2(got, want), 0.02);  // bf16 weights against the f32 reference (0.0072 here)

  // generate: a pipeline folder without text_encoder/ or tokenizer/, and the GGUF.
  const std::string p = dir.file("klein");
  fs::create_directories(p);
  fs::copy(test::fixture("flux2/prompt_models/transformer"), p + "/transformer", fs::copy_options::recursive);
  fs::copy(test::fixture("flux2/pipeline_models/vae"), p + "/vae", fs::copy_options::recursive);
  std::ofstream(p + "/model_index.json") << "{\"_class_name\": \"Flux2KleinPipeline\", \"is_distilled\": true}\n";
  CliRun g = quill_cli("generate --model '" + p + "' --text-encoder '" + gguf + "' --prompt 'a red fox in snow' --steps 2 -o '" +
                           dir.file("fox.png") + "'",
                       dir);
  ASSERT_EQ(g.code, 0) << g.err;
  EXPECT_TRUE(fs::exists(dir.file("fox.png")));
  // A safetensors encoder has no tokenizer in it: said so.
  CliRun no_tok = quill_cli("encode-prompt --text-encoder '" + test::fixture("flux2/prompt_models/text_encoder") +
                                "' --prompt x -o '" + dir.file("n.safetensors") + "'",
                            dir);
  EXPECT_EQ(no_tok.code, 2) << no_tok.err;
  EXPECT_NE(no_tok.err.find("no tokenizer given"), std::string::npos) << no_tok.err;
}

}  // namespace
}  // namespace quill
