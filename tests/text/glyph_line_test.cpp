// Glyph-line rendering: golden images (binary PGM under tests/fixtures/text/, regenerate with
// QUILL_UPDATE_GOLDEN=1), shaping properties and every error path.
#include "text/glyph_line.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <thread>

#include "io/io_test_util.h"
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
                          Golden{"combining", "e\xcc\x81 a\xcc\x8a o\xcc\x88"}, Golden{"digits", "1234567890 §17"},
                          // marks with no precomposed form: placed by GPOS / HarfBuzz's fallback (x/y offsets)
                          Golden{"marks", "q\xcc\x81 x\xcc\xa3 g\xcc\x83\xcc\x84 w\xcc\xb0"}}) {
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

// Messages the user acts on: what is wrong and where.
std::string render_error(GlyphLineRenderer& r, const std::string& text, int64_t h = 64, int64_t max_width = 1024) {
  auto g = r.render(text, h, max_width, 8, 2, OverflowPolicy::kError);
  return g.is_ok() ? "ok" : g.status().to_string();
}

TEST(GlyphLine, MoreErrors) {
  auto r = renderer();
  ASSERT_TRUE(r);
  auto has = [](const std::string& s, const char* part) { return s.find(part) != std::string::npos; };
  EXPECT_TRUE(has(render_error(*r, ""), "the text is empty"));
  EXPECT_TRUE(has(render_error(*r, "\xc2\xa0\xe2\x80\x8b"), "only whitespace"));  // NBSP + ZWSP draw nothing
  EXPECT_TRUE(has(render_error(*r, "a\tb"), "U+0009"));
  EXPECT_TRUE(has(render_error(*r, "a\nb"), "one line"));
  EXPECT_TRUE(has(render_error(*r, "abc", 7), "line height 7 out of range [8, 1024]"));
  EXPECT_TRUE(has(render_error(*r, "abc", 1025), "line height 1025 out of range"));
  EXPECT_EQ(render_error(*r, "abc", 8), "ok");
  EXPECT_TRUE(has(render_error(*r, "abc", 64, 1000), "multiple of 16"));
  const std::string too_long = render_error(*r, std::string(400, 'W'));
  EXPECT_TRUE(has(too_long, "max line width is 1024")) << too_long;
  EXPECT_TRUE(has(r->measure("a\xff", 64).status().message(), "UTF-8"));
  // A mix of missing and present glyphs renders; only all-missing is an error, listing a few.
  const std::string cjk = render_error(*r, "\xe6\xbc\xa2\xe5\xad\x97 \xe6\xbc\xa2");
  EXPECT_TRUE(has(cjk, "U+6F22 '\xe6\xbc\xa2', U+5B57 '\xe5\xad\x97')")) << cjk;

  testing::TempDir dir;
  testing::write_bytes(dir.file("empty.ttf"), "");
  auto empty_font = GlyphLineRenderer::create(dir.file("empty.ttf"));
  ASSERT_FALSE(empty_font.is_ok());
  EXPECT_EQ(empty_font.status().code(), ErrorCode::kInvalidFile);
  EXPECT_TRUE(has(empty_font.status().to_string(), "empty.ttf': the font file is empty"));
  testing::write_bytes(dir.file("junk.otf"), "OTTO this is not really a font");
  auto junk = GlyphLineRenderer::create(dir.file("junk.otf"));
  ASSERT_FALSE(junk.is_ok());
  EXPECT_TRUE(has(junk.status().to_string(), "junk.otf': not a font FreeType can read")) << junk.status().to_string();
  auto folder = GlyphLineRenderer::create(dir.path().string());
  ASSERT_FALSE(folder.is_ok());
  EXPECT_TRUE(has(folder.status().message(), "not a regular file"));
}

TEST(GlyphLine, PartlyMissingGlyphsAreReported) {
  auto r = renderer();
  ASSERT_TRUE(r);
  const GlyphLine g = render(*r,
                             "a\xe6\xbc\xa2"
                             "b\xe6\xbc\xa2");  // a漢b漢
  EXPECT_EQ(g.missing, (std::vector<uint32_t>{0x6f22}));
  EXPECT_TRUE(render(*r,
                     "Kongl. Maj:ts n\xc3\xa5"
                     "diga f\xc3\xb6rordning \xc3\x85\xc3\x84\xc3\x96")
                  .missing.empty());
}

// The documented layout rule, checked on "H" (flat bottom on the baseline, DejaVu cap height
// 1493/2048 em, left side bearing 201/2048 em): hinting puts its stems on whole pixels.
TEST(GlyphLine, LayoutRuleBaselineFontSizeMargin) {
  auto r = renderer();
  ASSERT_TRUE(r);
  for (int64_t h : {16, 32, 64, 100, 256}) {
    const GlyphLayout l = glyph_layout(h);
    EXPECT_EQ(l.font_px, std::llround(0.625 * double(h)));
    EXPECT_EQ(l.baseline_y, std::llround(0.75 * double(h)));
    EXPECT_EQ(l.margin, h / 8);
    const GlyphLine g = render(*r, "HH", h);
    int64_t top = -1, bottom = -1, left = g.width;
    for (int64_t y = 0; y < g.height; ++y)
      for (int64_t x = 0; x < g.width; ++x)
        if (g.gray[size_t(y * g.width + x)] < 128) {
          if (top < 0) top = y;
          bottom = y;
          left = std::min(left, x);
        }
    SCOPED_TRACE("line height " + std::to_string(h));
    EXPECT_EQ(bottom, l.baseline_y - 1);
    EXPECT_NEAR(double(bottom + 1 - top), 1493.0 / 2048.0 * double(l.font_px), 1.0);
    EXPECT_NEAR(double(left), double(l.margin) + 201.0 / 2048.0 * double(l.font_px), 1.0);
  }
}

TEST(GlyphLine, LigaturesAndSwedish) {
  auto r = renderer();
  ASSERT_TRUE(r);
  // DejaVu Sans has the ffi/fi/fl ligatures; a ZWNJ between the letters prevents them.
  EXPECT_EQ(render(*r, "ffi").glyph_count, 1);
  EXPECT_EQ(render(*r, "ffi office").glyph_count, 6);
  EXPECT_GE(render(*r,
                   "f\xe2\x80\x8c"
                   "f\xe2\x80\x8c"
                   "i")
                .glyph_count,
            3);
  const GlyphLine swedish = render(*r, "\xc3\xa5\xc3\xa4\xc3\xb6");  // åäö
  EXPECT_EQ(swedish.glyph_count, 3);
  // Decomposed å (a + ring) composes to the same glyph.
  EXPECT_LE(mean_abs_diff(swedish, render(*r,
                                          "a\xcc\x8a"
                                          "a\xcc\x88o\xcc\x88")),
            0.5);
}

TEST(GlyphLine, ClampClipsTheSameRendering) {
  auto r = renderer();
  ASSERT_TRUE(r);
  const std::string text =
      "Kongl. Maj:ts n\xc3\xa5"
      "diga f\xc3\xb6rordning, om hwad som iakttagas b\xc3\xb6r";
  auto full = r->render(text, 64, 4096, 8, 2, OverflowPolicy::kError);
  ASSERT_TRUE(full.is_ok()) << full.status().to_string();
  ASSERT_GT(full->bucket.natural_width, 512);
  auto clipped = r->render(text, 64, 512, 8, 2, OverflowPolicy::kClamp);
  ASSERT_TRUE(clipped.is_ok()) << clipped.status().to_string();
  EXPECT_EQ(clipped->width, 512);
  EXPECT_TRUE(clipped->bucket.clamped);
  EXPECT_EQ(clipped->bucket.natural_width, full->bucket.natural_width);
  EXPECT_EQ(clipped->bucket.tokens, 512 / 8 / 2);
  for (int64_t y = 0; y < 64; ++y)
    for (int64_t x = 0; x < 512; ++x)
      ASSERT_EQ(clipped->gray[size_t(y * 512 + x)], full->gray[size_t(y * full->width + x)]) << x << "," << y;
}

// One renderer shared by threads rendering different heights: the face's pixel size is shared
// state, so shaping and rasterising must happen under one lock.
TEST(GlyphLine, ThreadSafeAcrossLineHeights) {
  auto r = renderer();
  ASSERT_TRUE(r);
  const GlyphLine small = render(*r, "Maj:ts", 32), big = render(*r, "Maj:ts", 64);
  std::vector<std::thread> threads;
  std::vector<int> bad(4, 0);
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&, t] {
      for (int i = 0; i < 40; ++i) {
        const bool use_small = (i + t) % 2 == 0;
        auto g = r->render("Maj:ts", use_small ? 32 : 64, 1024, 8, 2, OverflowPolicy::kError);
        if (!g.is_ok() || g->gray != (use_small ? small : big).gray) ++bad[size_t(t)];
      }
    });
  for (auto& th : threads) th.join();
  for (int t = 0; t < 4; ++t) EXPECT_EQ(bad[size_t(t)], 0) << "thread " << t;
}

}  // namespace
}  // namespace quill
