// The line pipeline end to end on the random-weight test line model (tests/fixtures/line/model)
// with the tiny Dinov2 fixture as its style encoder: plan reuse per bucket, CFG as one 2x batch,
// determinism, and every user-facing error.
#include "pipeline/line_pipeline.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "io/image.h"
#include "io/io_test_util.h"
#include "pipeline/style_encoder_dinov2.h"
#include "support/test_util.h"

namespace quill {
namespace {

namespace fs = std::filesystem;

// A model folder: the test line model plus the 24-wide Dinov2 fixture as style_encoder/. Each test
// gets its own folder: ctest runs tests in parallel, and rewriting a file another test has mapped
// kills that test with SIGBUS.
std::string model_with_style(const testing::TempDir& tmp) {
  const fs::path dir = tmp.path() / "model";
  fs::create_directories(dir / "style_encoder");
  for (const char* f : {"config.json", "model.safetensors"}) {
    fs::copy_file(test::fixture(std::string("line/model/") + f), dir / f, fs::copy_options::overwrite_existing);
    fs::copy_file(test::fixture(std::string("dinov2/swiglu/") + f), dir / "style_encoder" / f,
                  fs::copy_options::overwrite_existing);
  }
  return dir.string();
}

// Written once per temp dir: once read as a style, a file is an input this process must not overwrite.
std::string style_png(const testing::TempDir& tmp) {
  const std::string path = tmp.file("style_ref.png");
  if (std::filesystem::exists(path)) return path;
  Image img{40, 20, 3, std::vector<uint8_t>(40 * 20 * 3)};
  for (size_t i = 0; i < img.pixels.size(); ++i) img.pixels[i] = uint8_t((i * 37) % 251);
  EXPECT_TRUE(write_png(path, img).is_ok());
  return path;
}

std::unique_ptr<LinePipeline> open_pipeline(ThreadPool& pool, const std::string& dir) {
  auto p = LinePipeline::open(dir, "", pool);
  EXPECT_TRUE(p.is_ok()) << p.status().to_string();
  if (!p.is_ok()) return nullptr;
  auto enc = Dinov2StyleEncoder::open_if_present(dir, pool);
  EXPECT_TRUE(enc.is_ok()) << enc.status().to_string();
  if (enc.is_ok() && *enc) (*p)->set_style_encoder(std::move(enc.value()));
  return std::move(p.value());
}

TEST(LinePipeline, OnePlanPerBucketCfgAsOneBatchDeterministic) {
  testing::TempDir tmp;
  ThreadPool pool(2);
  auto p = open_pipeline(pool, model_with_style(tmp));
  ASSERT_TRUE(p);
  LineOptions o;
  o.steps = 3;
  o.guidance_scale = 2.0f;
  // "abc" and "abd" fall in the same bucket; "a much longer line" in another.
  auto a = p->generate({"abc", "a much longer line", "abd"}, style_png(tmp), o, /*max_batch=*/1);
  ASSERT_TRUE(a.is_ok()) << a.status().to_string();
  ASSERT_EQ(a->size(), 3u);
  EXPECT_EQ((*a)[0].width, (*a)[2].width);
  EXPECT_NE((*a)[0].width, (*a)[1].width);
  EXPECT_EQ(p->engine().plan_stats().builds, 2u);  // two buckets, two plans
  // Guidance on: every forward ran at batch 2 (uncond + cond stacked), never two batch-1 forwards.
  EXPECT_TRUE(p->engine().plan({2, (*a)[0].width}).is_ok());
  EXPECT_EQ(p->engine().plan_stats().builds, 2u);
  auto b = p->generate({"abc", "a much longer line", "abd"}, style_png(tmp), o, 1);
  ASSERT_TRUE(b.is_ok());
  EXPECT_EQ((*a)[0].gray, (*b)[0].gray);  // same seed, same pixels
  o.seed = 5;
  auto c = p->generate({"abc"}, style_png(tmp), o, 1);
  ASSERT_TRUE(c.is_ok());
  EXPECT_NE((*a)[0].gray, (*c)[0].gray);
}

// style_encoder/style_layout.json picks the encoder's input layout: "wrap" embeds the line wrapped at
// writing size (wrap_style_line), as if that square were the reference; bad files name the file.
TEST(LinePipeline, StyleLayoutFileChoosesTheEncodersInput) {
  testing::TempDir tmp;
  ThreadPool pool(1);
  const std::string dir = model_with_style(tmp);
  Image line{60, 10, 1, std::vector<uint8_t>(600, 230)};
  for (int y = 2; y < 8; ++y)
    for (int x = 5; x < 50; x += 3) line.pixels[size_t(y * 60 + x)] = uint8_t(20 + 4 * x);
  const int size = 15;  // the Dinov2 fixture's image_size
  auto squash = Dinov2StyleEncoder::open_if_present(dir, pool);
  ASSERT_TRUE(squash.is_ok() && *squash) << squash.status().to_string();
  auto plain = (*squash)->embed_image(line);
  ASSERT_TRUE(plain.is_ok()) << plain.status().to_string();
  auto square = wrap_style_line(line, size, 5);
  ASSERT_TRUE(square.is_ok());
  ASSERT_EQ(resize_antialiased(*square, size, size).pixels, square->pixels);  // the squash path keeps it as is
  auto of_square = (*squash)->embed_image(*square);
  ASSERT_TRUE(of_square.is_ok());

  const std::string layout_file = dir + "/style_encoder/style_layout.json";
  std::ofstream(layout_file) << R"({"layout": "wrap", "row_height": 5})";
  auto wrap = Dinov2StyleEncoder::open_if_present(dir, pool);
  ASSERT_TRUE(wrap.is_ok() && *wrap) << wrap.status().to_string();
  auto wrapped = (*wrap)->embed_image(line);
  ASSERT_TRUE(wrapped.is_ok()) << wrapped.status().to_string();
  EXPECT_EQ(*wrapped, *of_square);
  EXPECT_NE(*wrapped, *plain);

  for (const auto& [text, needle] : std::vector<std::pair<std::string, std::string>>{
           {R"({"layout": "spiral", "row_height": 5})", "'layout' must be \"squash\" or \"wrap\""},
           {R"({"layout": "wrap", "row_height": 4})", "'row_height' must be a whole number dividing"},
           {R"({"layout": "wrap"})", "'row_height' must be a whole number dividing"},
           {R"({"layout": "wrap", "row_height": 5, "rows": 3})", "unknown key 'rows'"},
           {R"(["wrap"])", "must be a JSON object"},
           {R"({"layout": "wrap", )", "style_layout.json"}}) {
    std::ofstream(layout_file, std::ios::trunc) << text;
    auto bad = Dinov2StyleEncoder::open_if_present(dir, pool);
    ASSERT_FALSE(bad.is_ok()) << text;
    EXPECT_NE(bad.status().to_string().find(needle), std::string::npos) << bad.status().to_string();
    EXPECT_NE(bad.status().to_string().find("style_layout.json"), std::string::npos) << bad.status().to_string();
  }
}

TEST(LinePipeline, ClearErrors) {
  testing::TempDir tmp;
  ThreadPool pool(1);
  const std::string dir = model_with_style(tmp);
  auto p = open_pipeline(pool, dir);
  ASSERT_TRUE(p);
  LineOptions o;
  o.steps = 1;
  auto expect_error = [&](const std::vector<std::string>& texts, const std::string& style, const std::string& needle) {
    auto r = p->generate(texts, style, o);
    ASSERT_FALSE(r.is_ok()) << needle;
    EXPECT_NE(r.status().to_string().find(needle), std::string::npos) << r.status().to_string();
  };
  expect_error({"  "}, "", "the text is empty");
  expect_error({"\xe6\xbc\xa2\xe5\xad\x97"}, "", "no glyph for any character");
  expect_error({std::string(300, 'W')}, "", "max line width is 256");
  expect_error({"abc"}, "/nonexistent/style.png", "/nonexistent/style.png");
  const std::string empty = tmp.file("quill_empty.png");
  std::ofstream(empty).close();
  expect_error({"abc"}, empty, "quill_empty.png");
  const std::string junk = tmp.file("quill_junk.png");
  std::ofstream(junk) << "this is not an image";
  expect_error({"abc"}, junk, "quill_junk.png");
  expect_error({}, "", "no lines");
  auto no_font = LinePipeline::open(dir, "/nonexistent/font.ttf", pool);
  ASSERT_FALSE(no_font.is_ok());
  EXPECT_NE(no_font.status().to_string().find("font file does not exist"), std::string::npos);
  // A model without a style encoder refuses --style instead of ignoring it.
  auto plain = LinePipeline::open(test::fixture("line/model"), "", pool);
  ASSERT_TRUE(plain.is_ok());
  auto r = (*plain)->generate({"abc"}, style_png(tmp), o);
  ASSERT_FALSE(r.is_ok());
  EXPECT_NE(r.status().message().find("no style encoder"), std::string::npos);
}

}  // namespace
}  // namespace quill
