// The line sampler's schedule and its start-from-the-glyph-line mode (SDEdit), on the random test
// line model: schedule values, that start_sigma < 1 really starts from the glyphs, and errors.
#include "pipeline/line_sampler.h"

#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>

#include "io/io_test_util.h"
#include "pipeline/line_pipeline.h"
#include "runtime/line_engine.h"
#include "support/test_util.h"

namespace quill {
namespace {

TEST(LineSampler, ScheduleFromPureNoiseAndFromAStartSigma) {
  std::vector<float> s, t;
  line_sigma_schedule(4, 1.0f, &s, &t);
  ASSERT_EQ(s.size(), 5u);
  ASSERT_EQ(t.size(), 4u);
  EXPECT_FLOAT_EQ(s[0], 1.0f);
  EXPECT_FLOAT_EQ(s[2], 0.5f);
  EXPECT_EQ(s[4], 0.0f);
  EXPECT_FLOAT_EQ(t[1], 750.0f);
  line_sigma_schedule(4, 1.0f, &s, &t, 0.6f);
  EXPECT_FLOAT_EQ(s[0], 0.6f);
  EXPECT_FLOAT_EQ(s[2], 0.3f);
  EXPECT_EQ(s[4], 0.0f);
  // shift 3 applies to the started schedule: shift(0.6) = 1.8 / 2.2.
  line_sigma_schedule(4, 3.0f, &s, &t, 0.6f);
  EXPECT_NEAR(s[0], 1.8f / 2.2f, 1e-6f);
}

TEST(LineSampler, StartSigmaBeginsFromTheGlyphLine) {
  ThreadPool pool(2);
  auto engine = open_line_engine(test::fixture("line/model"), pool);
  ASSERT_TRUE(engine.is_ok()) << engine.status().to_string();
  const auto& cfg = (*engine)->model().config();
  const int64_t H = cfg.latent_height(), W = 32;
  std::vector<float> glyphs(size_t(H * W), -1.0f);
  for (int64_t y = 4; y < 12; ++y)
    for (int64_t x = 8; x < 20; ++x) glyphs[size_t(y * W + x)] = 1.0f;  // an inked box
  LineSampleRequest r;
  r.latent_w = W;
  r.glyphs = glyphs.data();
  r.steps = 1;
  r.seed = 5;
  // One step from sigma s to 0: x0 = x_s - s v; with start_sigma -> tiny, x_s ~ -glyphs.
  r.start_sigma = 0.01f;
  std::vector<float> out;
  ASSERT_TRUE(line_sample(**engine, r, &out).is_ok());
  double err = 0;
  for (size_t i = 0; i < out.size(); ++i) err = std::max(err, std::fabs(double(out[i]) + glyphs[i]));
  EXPECT_LT(err, 0.2);  // ink -> -1, paper -> +1 up to 1% of a random model's velocity
  r.start_sigma = 1.0f;
  std::vector<float> noise_start;
  ASSERT_TRUE(line_sample(**engine, r, &noise_start).is_ok());
  EXPECT_GT(test::rel_l2(noise_start, out), 0.5);

  for (float bad : {0.0f, -0.5f, 1.5f, NAN}) {
    r.start_sigma = bad;
    Status st = line_sample(**engine, r, &out);
    ASSERT_FALSE(st.is_ok()) << bad;
    EXPECT_NE(st.to_string().find("start sigma must be in (0, 1]"), std::string::npos) << st.to_string();
  }
}

// A smaller batch run in a bigger plan of its width gives the exact plan's result bit for bit,
// and a request's leftover batch then builds no plan of its own.
TEST(LineSampler, SmallerBatchInABiggerPlanIsBitIdentical) {
  ThreadPool pool(2);
  auto engine = open_line_engine(test::fixture("line/model"), pool);
  ASSERT_TRUE(engine.is_ok()) << engine.status().to_string();
  const auto& cfg = (*engine)->model().config();
  const int64_t H = cfg.latent_height(), W = 32;
  const auto glyphs = test::random_normal(size_t(H * W), 7);
  const auto style = test::random_normal(size_t(cfg.style_dim), 8);
  LineSampleRequest r;
  r.latent_w = W;
  r.glyphs = glyphs.data();
  r.style = style.data();
  r.guidance_scale = 2.0f;
  r.steps = 2;
  r.seed = 9;
  std::vector<float> exact, in_big;
  ASSERT_TRUE(line_sample(**engine, r, &exact).is_ok());
  const auto builds = (*engine)->plan_stats().builds;
  r.plan_rows = 8;  // a plan for 4 guided lines
  ASSERT_TRUE(line_sample(**engine, r, &in_big).is_ok());
  EXPECT_EQ(exact, in_big);
  EXPECT_EQ((*engine)->plan_stats().builds, builds + 1);
  ASSERT_TRUE(line_sample(**engine, r, &in_big).is_ok());
  EXPECT_EQ((*engine)->plan_stats().builds, builds + 1) << "the big plan is reused";
  // The same with guidance on the text (blank glyph lines in the unconditional rows).
  r.guide_glyph = true;
  r.plan_rows = 0;
  ASSERT_TRUE(line_sample(**engine, r, &exact).is_ok());
  r.plan_rows = 8;
  ASSERT_TRUE(line_sample(**engine, r, &in_big).is_ok());
  EXPECT_EQ(exact, in_big);
}

// guide_glyph: one guided step from pure noise is x = n - (v_u + g (v_c - v_u)), where the
// unconditional velocity v_u now sees a blank glyph line as well as no style.
TEST(LineSampler, GuideGlyphBlanksTheUnconditionalGlyphLine) {
  ThreadPool pool(2);
  auto engine = open_line_engine(test::fixture("line/model"), pool);
  ASSERT_TRUE(engine.is_ok()) << engine.status().to_string();
  const auto& cfg = (*engine)->model().config();
  const int64_t H = cfg.latent_height(), W = 32;
  const auto glyphs = test::random_normal(size_t(H * W), 11);
  const std::vector<float> blank(size_t(H * W), -1.0f);
  const auto style = test::random_normal(size_t(cfg.style_dim), 12);
  auto one_step = [&](const float* g, const float* s, float guidance, bool guide_glyph) {
    LineSampleRequest r;
    r.latent_w = W;
    r.glyphs = g;
    r.style = s;
    r.guidance_scale = guidance;
    r.guide_glyph = guide_glyph;
    r.steps = 1;
    r.seed = 13;
    std::vector<float> out;
    EXPECT_TRUE(line_sample(**engine, r, &out).is_ok());
    return out;  // n - v
  };
  const auto cond = one_step(glyphs.data(), style.data(), 1.0f, false);
  const auto uncond_blank = one_step(blank.data(), nullptr, 1.0f, false);
  const auto uncond_same = one_step(glyphs.data(), nullptr, 1.0f, false);
  const auto guided = one_step(glyphs.data(), style.data(), 3.0f, true);
  std::vector<float> want(cond.size()), style_only(cond.size());
  for (size_t i = 0; i < want.size(); ++i) {
    want[i] = 3.0f * cond[i] - 2.0f * uncond_blank[i];
    style_only[i] = 3.0f * cond[i] - 2.0f * uncond_same[i];
  }
  EXPECT_LT(test::rel_l2(guided, want), 1e-5);
  EXPECT_GT(test::rel_l2(guided, style_only), 1e-3) << "the blank glyph line must change the guidance";
  EXPECT_LT(test::rel_l2(one_step(glyphs.data(), style.data(), 3.0f, false), style_only), 1e-5);
}

TEST(LineSampler, ModelSamplerJsonDefaults) {
  testing::TempDir tmp;
  const auto dir = tmp.path();
  auto none = line_options_for_model(dir.string());
  ASSERT_TRUE(none.is_ok());
  EXPECT_EQ(none->start_sigma, 1.0f);
  EXPECT_EQ(none->steps, 20);
  std::ofstream(dir / "sampler.json") << R"({"start_sigma": 0.75, "guidance_scale": 3, "steps": 12})";
  auto some = line_options_for_model(dir.string());
  ASSERT_TRUE(some.is_ok()) << some.status().to_string();
  EXPECT_FLOAT_EQ(some->start_sigma, 0.75f);
  EXPECT_FLOAT_EQ(some->guidance_scale, 3.0f);
  EXPECT_EQ(some->steps, 12);
  EXPECT_FLOAT_EQ(some->shift, 1.0f);
  EXPECT_FALSE(some->guide_glyph);
  std::ofstream(dir / "sampler.json") << R"({"guide_glyph": true})";
  auto glyph = line_options_for_model(dir.string());
  ASSERT_TRUE(glyph.is_ok()) << glyph.status().to_string();
  EXPECT_TRUE(glyph->guide_glyph);
  const std::pair<const char*, const char*> bad[] = {
      {"[1, 2]", "must be a JSON object"},
      {"{not json", "parse error at line 1, column 3"},  // where, not just "bad JSON"
      {R"({"start_sigma": 0})", "'start_sigma' must be a number"},
      {R"({"steps": "many"})", "'steps' must be a number"},
      {R"({"steps": 2.5})", "'steps' must be a whole number"},
      {R"({"guide_glyph": 1})", "'guide_glyph' must be true or false"},
      {R"({"guidence_scale": 3})", "unknown key 'guidence_scale'"},
      {R"({"steps": 4, "steps": 5})", "duplicate"}};
  for (const auto& [text, phrase] : bad) {
    std::ofstream(dir / "sampler.json") << text;
    auto r = line_options_for_model(dir.string());
    ASSERT_FALSE(r.is_ok()) << text;
    EXPECT_NE(r.status().to_string().find(phrase), std::string::npos) << r.status().to_string();
    EXPECT_NE(r.status().to_string().find("sampler.json"), std::string::npos);
  }
}

}  // namespace
}  // namespace quill
