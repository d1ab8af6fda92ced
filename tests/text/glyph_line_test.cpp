// Glyph-line rendering: golden images (binary PGM under tests/fixtures/text/, regenerate with
// QUILL_UPDATE_GOLDEN=1), shaping properties and every error path.
#include "text/glyph_line.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include "support/test_util.h"

namespace quill {
namespace {

std::unique_ptr<GlyphLineRenderer> renderer() {
  auto r = GlyphLineRenderer::create();
  EXPECT_TRUE(r.is_ok()) << r.status().to_string();
  return r.is_ok() ? std::move(r.value()) : nullptr;
}

GlyphLine render(GlyphLineRenderer& r, const std::string& text, int64_t h = 64) {
  auto g = r.render(text, h, 1024, 8, 2, OverflowPolicy::kError);
  EXPECT_TRUE(g.is_ok()) << g.status().to_string();
  return g.is_ok() ? g.value() : GlyphLine{};
}

void write_pgm(const std::string& path, const GlyphLine& g) {
  std::ofstream f(path, std::ios::binary);
  f << "P5\n" << g.width << " " << g.height << "\n255\n";
  f.write(reinterpret_cast<const char*>(g.gray.data()), std::streamsize(g.gray.size()));
}

bool read_pgm(const std::string& path, GlyphLine* g) {
  std::ifstream f(path, std::ios::binary);
  std::string magic;
  int maxv = 0;
  if (!(f >> magic >> g->width >> g->height >> maxv) || magic != "P5" || maxv != 255) return false;
  f.get();
  g->gray.resize(static_cast<size_t>(g->width * g->height));
  f.read(reinterpret_cast<char*>(g->gray.data()), std::streamsize(g->gray.size()));
  return bool(f);
}

double mean_abs_diff(const GlyphLine& a, const GlyphLine& b) {
  if (a.width != b.width || a.height != b.height) return 1e9;
  double s = 0;
  for (size_t i = 0; i < a.gray.size(); ++i) s += std::abs(int(a.gray[i]) - int(b.gray[i]));
  return s / double(a.gray.size());
}

double ink(const GlyphLine& g) {
  double s = 0;
  for (uint8_t v : g.gray) s += 255 - v;
  return s / 255.0;
}

struct Golden {
  const char* name;
  const char* text;
};

TEST(GlyphLine, GoldenImages) {
  auto r = renderer();
  ASSERT_TRUE(r);
  const bool update = std::getenv("QUILL_UPDATE_GOLDEN") != nullptr;
  for (const Golden& c : {Golden{"kongl", "Kongl. Maj:ts nådiga förordning"}, Golden{"ligature", "ffi office"},
                          Golden{"combining", "e\xcc\x81 a\xcc\x8a o\xcc\x88"}, Golden{"digits", "1234567890 §17"}}) {
    const GlyphLine g = render(*r, c.text);
    const std::string path = test::fixture(std::string("text/") + c.name + ".pgm");
    if (update) {
      write_pgm(path, g);
      continue;
    }
    GlyphLine want;
    ASSERT_TRUE(read_pgm(path, &want)) << path;
    // FreeType versions may differ by a level here and there; layout must not.
    EXPECT_LE(mean_abs_diff(g, want), 2.0) << c.name;
    EXPECT_GT(ink(g), 20.0) << c.name;  // something was drawn
  }
}

TEST(GlyphLine, ShapingComposesMarksAndPlacesBaselineConsistently) {
  auto r = renderer();
  ASSERT_TRUE(r);
  // "é" precomposed vs e + combining acute: HarfBuzz composes, so the pixels agree closely.
  EXPECT_LE(mean_abs_diff(render(*r, "\xc3\xa9t\xc3\xa9"), render(*r, "e\xcc\x81te\xcc\x81")), 1.0);
  // The same word renders identically at the start of different lines (fixed margin/baseline).
  const GlyphLine a = render(*r, "Maj"), b = render(*r, "Majx");
  for (int64_t y = 0; y < a.height; ++y)
    for (int64_t x = 0; x < 30; ++x) ASSERT_EQ(a.gray[size_t(y * a.width + x)], b.gray[size_t(y * b.width + x)]);
  // Natural width grows with the text; canvas follows the bucket rule.
  const int64_t w1 = r->measure("abc", 64).value(), w2 = r->measure("abcabc", 64).value();
  EXPECT_GT(w2, w1);
  const GlyphLine wide = render(*r, "abcabcabcabc");
  EXPECT_EQ(wide.width % 16, 0);
  EXPECT_GE(wide.width, wide.bucket.natural_width);
}

TEST(GlyphLine, Errors) {
  auto r = renderer();
  ASSERT_TRUE(r);
  auto empty = r->render("   ", 64, 1024, 8, 2, OverflowPolicy::kError);
  ASSERT_FALSE(empty.is_ok());
  EXPECT_NE(empty.status().message().find("empty"), std::string::npos);
  auto cjk = r->render("\xe6\xbc\xa2\xe5\xad\x97", 64, 1024, 8, 2, OverflowPolicy::kError);  // 漢字: not in DejaVu Sans
  ASSERT_FALSE(cjk.is_ok());
  EXPECT_NE(cjk.status().message().find("no glyph for any character"), std::string::npos) << cjk.status().to_string();
  EXPECT_NE(cjk.status().message().find("\xe6\xbc\xa2"), std::string::npos);
  auto bad = r->render("ab\xff", 64, 1024, 8, 2, OverflowPolicy::kError);
  ASSERT_FALSE(bad.is_ok());
  EXPECT_NE(bad.status().message().find("UTF-8"), std::string::npos);
  const std::string long_text(400, 'W');
  auto too_long = r->render(long_text, 64, 1024, 8, 2, OverflowPolicy::kError);
  ASSERT_FALSE(too_long.is_ok());
  EXPECT_NE(too_long.status().message().find("max line width is 1024"), std::string::npos);
  auto clamped = r->render(long_text, 64, 1024, 8, 2, OverflowPolicy::kClamp);
  ASSERT_TRUE(clamped.is_ok());
  EXPECT_EQ(clamped->width, 1024);
  EXPECT_TRUE(clamped->bucket.clamped);
  auto missing = GlyphLineRenderer::create("/nonexistent/font.ttf");
  ASSERT_FALSE(missing.is_ok());
  EXPECT_EQ(missing.status().to_string(), "file '/nonexistent/font.ttf': font file does not exist");
  auto not_font = GlyphLineRenderer::create(test::fixture("sd3/tiny/config.json"));
  ASSERT_FALSE(not_font.is_ok());
  EXPECT_NE(not_font.status().message().find("not a font"), std::string::npos);
  auto absurd = r->render("abc", 100000, 1024, 8, 2, OverflowPolicy::kError);
  ASSERT_FALSE(absurd.is_ok());
  EXPECT_NE(absurd.status().message().find("out of range"), std::string::npos);
}

}  // namespace
}  // namespace quill
