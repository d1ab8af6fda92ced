// The line studio API (include/quill/line_studio.h) on the shipped model and the test fixtures:
// the model's defaults and default hand, styles from a file or from pixels, progress, cancellation,
// argument checks, and concurrent callers getting what sequential ones get.
#include "quill/line_studio.h"

#include <gtest/gtest.h>

#include <atomic>
#include <cmath>
#include <thread>

#include "io/image.h"
#include "support/test_util.h"

namespace quill {
namespace {

std::unique_ptr<LineStudio> open_default(int threads = 2) {
  LineStudioOptions o;
  o.threads = threads;
  o.device = DeviceChoice::kCpu;
  auto s = LineStudio::open(o);
  EXPECT_TRUE(s.is_ok()) << s.status().to_string();
  return s.is_ok() ? std::move(s).value() : nullptr;
}

LineRequest quick(std::vector<std::string> texts) {
  LineRequest r;
  r.texts = std::move(texts);
  r.seed = 3;
  return r;
}

TEST(LineStudio, OpensTheDefaultModelWithItsSamplerDefaultsAndHand) {
  auto studio = open_default();
  ASSERT_TRUE(studio);
  EXPECT_FALSE(studio->model_dir().empty());
  EXPECT_TRUE(studio->has_style_encoder());
  EXPECT_NE(studio->default_style_path().find("style_reference.png"), std::string::npos);
  EXPECT_EQ(studio->device(), "cpu");
  EXPECT_GT(studio->line_height(), 0);
  EXPECT_GE(studio->max_line_width(), studio->line_height());
  EXPECT_GE(studio->defaults().steps, 1);
  EXPECT_LE(studio->defaults().start_sigma, 1.0f);
}

TEST(LineStudio, StyleFromPixelsEqualsStyleFromTheSameFile) {
  auto studio = open_default();
  ASSERT_TRUE(studio);
  const std::string hand = studio->default_style_path();
  auto img = read_image(hand);
  ASSERT_TRUE(img.is_ok()) << img.status().to_string();

  LineRequest from_file = quick({"Hej"});
  from_file.style = LineStyle::file(hand);
  LineRequest from_pixels = quick({"Hej"});
  from_pixels.style.kind = LineStyle::Kind::kPixels;
  from_pixels.style.width = img->width;
  from_pixels.style.height = img->height;
  from_pixels.style.channels = img->channels;
  from_pixels.style.pixels = img->pixels;
  LineRequest by_default = quick({"Hej"});  // the model's default hand is that same file
  LineRequest none = quick({"Hej"});
  none.style = LineStyle::none();

  auto a = studio->generate(from_file), b = studio->generate(from_pixels), c = studio->generate(by_default),
       d = studio->generate(none);
  ASSERT_TRUE(a.is_ok() && b.is_ok() && c.is_ok() && d.is_ok()) << a.status().to_string() << b.status().to_string();
  EXPECT_EQ((*a)[0].gray, (*b)[0].gray);
  EXPECT_EQ((*a)[0].gray, (*c)[0].gray);
  EXPECT_NE((*a)[0].gray, (*d)[0].gray);
  EXPECT_EQ((*a)[0].height, studio->line_height());
  EXPECT_EQ((*a)[0].width, (*a)[0].bucket_width);
}

TEST(LineStudio, ReportsProgressPerStepAndLineAndCancels) {
  auto studio = open_default();
  ASSERT_TRUE(studio);
  LineRequest r = quick({"a", "bb", "a much longer line of text"});
  LineSampling s = studio->defaults();
  s.steps = 3;
  r.sampling = s;
  int step_calls = 0, last_done = 0;
  r.on_progress = [&](const LineProgress& p) {
    EXPECT_EQ(p.lines_total, 3);
    EXPECT_EQ(p.steps, 3);
    if (p.lines_done != last_done)
      last_done = p.lines_done;
    else
      ++step_calls;
  };
  LineTiming t;
  auto out = studio->generate(r, &t);
  ASSERT_TRUE(out.is_ok()) << out.status().to_string();
  EXPECT_EQ(last_done, 3);
  EXPECT_GE(step_calls, 3);
  EXPECT_EQ(t.lines, 3);
  EXPECT_GE(t.plan_builds, 1u);

  std::atomic<bool> cancel{true};
  r.cancel = &cancel;
  auto cancelled = studio->generate(r);
  ASSERT_FALSE(cancelled.is_ok());
  EXPECT_EQ(cancelled.status().code(), ErrorCode::kCancelled);
}

TEST(LineStudio, RejectsBadRequestsWithTheFieldName) {
  auto studio = open_default();
  ASSERT_TRUE(studio);
  auto empty = studio->generate(LineRequest{});
  EXPECT_EQ(empty.status().code(), ErrorCode::kInvalidArgument);
  for (auto [field, set] : std::vector<std::pair<std::string, std::function<void(LineSampling&)>>>{
           {"steps", [](LineSampling& s) { s.steps = 0; }},
           {"guidance_scale", [](LineSampling& s) { s.guidance_scale = std::nanf(""); }},
           {"shift", [](LineSampling& s) { s.shift = INFINITY; }},
           {"start_sigma", [](LineSampling& s) { s.start_sigma = 1.5f; }}}) {
    LineRequest r = quick({"x"});
    LineSampling s = studio->defaults();
    set(s);
    r.sampling = s;
    auto bad = studio->generate(r);
    ASSERT_FALSE(bad.is_ok()) << field;
    EXPECT_EQ(bad.status().code(), ErrorCode::kInvalidArgument) << field;
    EXPECT_NE(bad.status().message().find(field), std::string::npos) << bad.status().to_string();
  }
  LineRequest pixels = quick({"x"});
  pixels.style.kind = LineStyle::Kind::kPixels;
  pixels.style.width = pixels.style.height = 8;
  pixels.style.channels = 3;
  pixels.style.pixels.resize(10);  // not 8 x 8 x 3
  auto bad = studio->generate(pixels);
  ASSERT_FALSE(bad.is_ok());
  EXPECT_NE(bad.status().message().find("192"), std::string::npos) << bad.status().to_string();
  LineRequest missing = quick({"x"});
  missing.style = LineStyle::file("/nonexistent/hand.png");
  EXPECT_FALSE(studio->generate(missing).is_ok());
  LineStudioOptions nowhere;
  nowhere.model_dir = "/nonexistent/model";
  EXPECT_FALSE(LineStudio::open(nowhere).is_ok());
}

TEST(LineStudio, ConcurrentCallersGetWhatSequentialCallersGet) {
  auto studio = open_default(1);
  ASSERT_TRUE(studio);
  const std::vector<std::string> texts = {"Kongl.", "Maj:ts", "nådiga förordning"};
  std::vector<std::vector<uint8_t>> want;
  for (const auto& t : texts) want.push_back(studio->generate(quick({t})).value()[0].gray);
  std::vector<std::vector<uint8_t>> got(texts.size());
  std::vector<std::thread> threads;
  for (size_t i = 0; i < texts.size(); ++i)
    threads.emplace_back([&, i] { got[i] = studio->generate(quick({texts[i]})).value()[0].gray; });
  for (auto& t : threads) t.join();
  EXPECT_EQ(got, want);
}

}  // namespace
}  // namespace quill

namespace quill {
namespace {

// Rows from several requests in one batch: each row's image does not depend on its batch. Rows of
// one width match their solo image to float rounding (at most 1 gray level: a batch changes the
// GEMMs' row count, and BLAS may sum a differently shaped product in another order; seen with the
// stage-4 weights on an Intel Xeon); a ragged batch (rows padded to the widest, padding masked out of
// attention) within 2. A row mix-up or leaked padding moves whole strokes, far past either bound.
TEST(LineStudio, RowsInSharedAndRaggedBatchesEqualTheirSoloLines) {
  LineStudioOptions o;
  o.threads = 2;
  auto studio = LineStudio::open(o).value();
  auto style = studio->embed_style(LineStyle::model_default()).value();
  const std::vector<std::string> texts = {"Kongl. Maj:ts nådiga förordning", "hej", "alla", "år 1766 i Stockholm"};
  LineSampling s = studio->defaults();
  s.steps = 6;
  std::vector<LineResult> solo;
  for (size_t i = 0; i < texts.size(); ++i) {
    LineRowsRequest one;
    one.rows = {{texts[i], i % 2 ? nullptr : style, 50 + i}};
    one.sampling = s;
    solo.push_back(studio->generate_rows(one).value()[0]);
  }
  for (bool ragged : {false, true}) {
    LineRowsRequest all;
    all.sampling = s;
    all.ragged = ragged;
    all.plan_batch = 8;
    for (size_t i = 0; i < texts.size(); ++i) all.rows.push_back({texts[i], i % 2 ? nullptr : style, 50 + i});
    auto batch = studio->generate_rows(all).value();
    ASSERT_EQ(batch.size(), texts.size());
    for (size_t i = 0; i < texts.size(); ++i) {
      ASSERT_EQ(batch[i].width, solo[i].width) << texts[i];
      int worst = 0;
      for (size_t k = 0; k < solo[i].gray.size(); ++k)
        worst = std::max(worst, std::abs(int(batch[i].gray[k]) - int(solo[i].gray[k])));
      EXPECT_LE(worst, ragged ? 2 : 1) << texts[i];
    }
  }
  // The one-line row API and generate() agree: the same seed gives the same line.
  LineRequest r;
  r.texts = {texts[0]};
  r.seed = 50;
  r.sampling = s;
  EXPECT_EQ(studio->generate(r).value()[0].gray, solo[0].gray);
}

}  // namespace
}  // namespace quill
