// Runs the real `quill render-line`: output PNG equals the library's rendering, the printed
// measurements follow the bucket rule, and exit codes are 0 ok / 1 runtime error / 2 usage error.
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <sstream>

#include "io/image.h"
#include "io/io_test_util.h"
#include "support/cli_run.h"
#include "text/glyph_line.h"

namespace quill {
namespace {

using test::CliRun;

CliRun render_line(const std::string& args, const testing::TempDir& dir) {
  return test::run_quill("render-line " + args, dir.file("stderr.txt"));
}

const char* kKongl =
    "Kongl. Maj:ts n\xc3\xa5"
    "diga f\xc3\xb6rordning";

TEST(RenderLineCli, WritesTheLibraryRenderingAndPrintsTheBucket) {
  testing::TempDir dir;
  auto renderer = GlyphLineRenderer::create();
  ASSERT_TRUE(renderer.is_ok()) << renderer.status().to_string();
  auto want = (*renderer)->render(kKongl, 64, 1024, 8, 2, OverflowPolicy::kError);
  ASSERT_TRUE(want.is_ok());

  const std::string png = dir.file("glyphs.png");
  CliRun r = render_line(std::string("--text '") + kKongl + "' --json -o '" + png + "'", dir);
  ASSERT_EQ(r.code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["natural_width"], want->bucket.natural_width);
  EXPECT_EQ(j["canvas_width"], want->width);
  EXPECT_EQ(j["canvas_width"].get<int64_t>() % 16, 0);
  EXPECT_EQ(j["height"], 64);
  EXPECT_EQ(j["latent_width"], want->width / 8);
  EXPECT_EQ(j["tokens"], want->width / 16);
  EXPECT_EQ(j["clamped"], false);
  EXPECT_TRUE(j["missing"].empty());
#ifdef QUILL_HAVE_IMAGE
  auto img = read_image(png);
  ASSERT_TRUE(img.is_ok()) << img.status().to_string();
  EXPECT_EQ(img->channels, 1);
  EXPECT_EQ(img->width, want->width);
  EXPECT_EQ(img->height, 64);
  EXPECT_EQ(img->pixels, want->gray);
#endif

  // Other heights, downscale and patch; the plain-text report.
  r = render_line(std::string("--text '") + kKongl + "' --line-height 40 --downscale 2 --patch 4", dir);
  ASSERT_EQ(r.code, 0) << r.err;
  auto want40 = (*renderer)->render(kKongl, 40, 1024, 2, 4, OverflowPolicy::kError);
  ASSERT_TRUE(want40.is_ok());
  const std::string expect = "natural width " + std::to_string(want40->bucket.natural_width) + " px, canvas " +
                             std::to_string(want40->width) + "x40 px, latent width " +
                             std::to_string(want40->width / 2) + ", " + std::to_string(want40->width / 8) +
                             " tokens per row";
  EXPECT_NE(r.out.find(expect), std::string::npos) << r.out << "\nwanted: " << expect;
}

// The line-model trainer (tools/line_data.py) renders its glyph lines with --batch-file; they must
// be the pixels `quill line` conditions on (GlyphLineRenderer::render with the model's geometry).
TEST(RenderLineCli, BatchFileWritesOnePngPerLineIdenticalToTheLibrary) {
  testing::TempDir dir;
  const std::string list = dir.file("texts.txt");
  {
    std::ofstream f(list);
    f << kKongl << "\n"
      << "hej\r\n"
      << "this line is far too wide for the 512 pixel canvas limit that this test sets on purpose, really\n";
  }
  std::filesystem::create_directories(dir.file("out"));
  CliRun r = render_line("--batch-file '" + list + "' --output-dir '" + dir.file("out") +
                             "' --line-height 32 --max-width 512 --downscale 1 --patch 8",
                         dir);
  EXPECT_EQ(r.code, 1) << r.err;  // the third line fails, the others are written
  auto renderer = GlyphLineRenderer::create();
  ASSERT_TRUE(renderer.is_ok());
  std::vector<nlohmann::json> rows;
  std::istringstream lines(r.out);
  for (std::string l; std::getline(lines, l);) rows.push_back(nlohmann::json::parse(l));
  ASSERT_EQ(rows.size(), 3u) << r.out;
  const char* texts[] = {kKongl, "hej"};
  for (int i = 0; i < 2; ++i) {
    EXPECT_EQ(rows[size_t(i)]["index"], i);
    EXPECT_EQ(rows[size_t(i)]["text"], texts[i]);
    auto want = (*renderer)->render(texts[i], 32, 512, 1, 8, OverflowPolicy::kError);
    ASSERT_TRUE(want.is_ok());
    EXPECT_EQ(rows[size_t(i)]["canvas_width"], want->width);
#ifdef QUILL_HAVE_IMAGE
    auto img = read_image(rows[size_t(i)]["png"].get<std::string>());
    ASSERT_TRUE(img.is_ok()) << img.status().to_string();
    EXPECT_EQ(img->width, want->width);
    EXPECT_EQ(img->pixels, want->gray) << texts[i];
#endif
  }
  EXPECT_TRUE(rows[2].contains("error"));
  EXPECT_FALSE(rows[2].contains("png"));
  EXPECT_NE(rows[2]["error"].get<std::string>().find("max line width is 512"), std::string::npos);

  r = render_line("--batch-file '" + list + "'", dir);
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("--output-dir"), std::string::npos) << r.err;
  r = render_line("--text abc --batch-file '" + list + "' --output-dir /tmp", dir);
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("exactly one of --text or --batch-file"), std::string::npos) << r.err;
}

TEST(RenderLineCli, OverflowPolicies) {
  testing::TempDir dir;
  CliRun r = render_line(std::string("--text '") + kKongl + "' --max-width 128", dir);
  EXPECT_EQ(r.code, 2);  // a text error, like every other
  EXPECT_NE(r.err.find("max line width is 128"), std::string::npos) << r.err;
  r = render_line(std::string("--text '") + kKongl + "' --max-width 128 --overflow clamp --json", dir);
  ASSERT_EQ(r.code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["canvas_width"], 128);
  EXPECT_EQ(j["clamped"], true);
  EXPECT_GT(j["natural_width"].get<int64_t>(), 128);
}

TEST(RenderLineCli, ExitCodesAndMessages) {
  testing::TempDir dir;
  struct Case {
    std::string args;
    int code;
    std::string phrase;  // in stderr
  };
  const Case cases[] = {
      {"--text abc --overflow wrap", 2, "overflow"},
      {"--line-height 64", 2, "--text"},
      {"--text abc --max-width 1000", 2, "multiple of 16"},
      {"--text abc --line-height 4", 2, "line-height"},
      {"--text ''", 2, "the text is empty"},
      {"--text '   '", 2, "only whitespace"},
      {"--text \"$(printf 'ab\\377')\"", 2, "not valid UTF-8"},
      {"--text \"$(printf 'a\\tb')\"", 2, "U+0009"},
      {"--text \"$(printf '\\346\\274\\242')\"", 2, "no glyph for any character"},
      {"--text abc --font /nonexistent/font.ttf", 2, "'/nonexistent/font.ttf': font file does not exist"},
      {"--text abc -o /nonexistent/dir/x.png", 1, "/nonexistent/dir/x.png"},
  };
  for (const Case& c : cases) {
    CliRun r = render_line(c.args, dir);
    EXPECT_EQ(r.code, c.code) << c.args << "\n" << r.err;
    EXPECT_NE(r.err.find(c.phrase), std::string::npos) << c.args << "\n" << r.err;
  }
  // Characters the font lacks: rendered, with a warning naming them.
  CliRun r = render_line("--text \"$(printf 'a\\346\\274\\242b')\"", dir);
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.err.find("warning: the font has no glyph for U+6F22"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace quill
