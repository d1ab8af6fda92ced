// Glyph-line rendering with FreeType + HarfBuzz: a line of UTF-8 text shaped (ligatures,
// combining marks, any script the font covers) and rasterised black on white into a canvas of
// the line height. The glyph line is the content conditioning of the line model, so training
// data must come from this same code (`quill render-line`) to be pixel-identical.
//
// Layout rule (documented, fixed; see glyph_layout): font pixel size = round(0.625 * line_height),
// baseline at y = round(0.75 * line_height) from the top, left margin = right margin =
// line_height / 8. With DejaVu Sans (ascender 0.93 em, descender 0.24 em) accented capitals start
// at ~0.17 h and descenders end at ~0.90 h, so nothing is clipped and every line of one height has
// its baseline on the same row.
//
// Built only with FreeType + HarfBuzz (QUILL_HAVE_TEXT); otherwise create() returns kUnsupported
// (src/text/no_glyph_line.cpp). Width buckets and the text checks (utf8.h) are always built.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "quill/status.h"
#include "text/utf8.h"
#include "text/width_bucket.h"

namespace quill {

struct GlyphLayout {
  int64_t font_px;     // FreeType pixel size (em height)
  int64_t baseline_y;  // row of the baseline, from the top
  int64_t margin;      // blank pixels left of the first glyph (and added right of the last)
};
GlyphLayout glyph_layout(int64_t line_height);

inline constexpr int64_t kMinLineHeight = 8;
inline constexpr int64_t kMaxLineHeight = 1024;

struct GlyphLine {
  int64_t width = 0, height = 0;  // canvas
  std::vector<uint8_t> gray;      // [height, width], 255 = paper, 0 = ink
  WidthBucket bucket;
  int64_t glyph_count = 0;  // glyphs after shaping ("ffi" is one glyph in fonts with the ligature)
  // Characters the font has no glyph for (drawn as the font's .notdef box), first few, in order.
  std::vector<uint32_t> missing;
};

class GlyphLineRenderer {
 public:
  // The default font when `font_path` is empty: DejaVu Sans from Debian's fonts-dejavu-core,
  // looked up at kDefaultFontPaths (no fontconfig: the glyph line must not depend on the host).
  static Result<std::unique_ptr<GlyphLineRenderer>> create(const std::string& font_path = "");
  static std::string default_font_path();  // empty when none of the known paths exists
  static const std::vector<std::string>& default_font_candidates();
  ~GlyphLineRenderer();

  const std::string& font_path() const { return font_path_; }

  // Natural width in pixels (margins included) of the shaped line at this height.
  Result<int64_t> measure(const std::string& utf8, int64_t line_height);
  // Renders into the bucket's canvas (see width_bucket.h for the rule and the overflow policy).
  // Errors: text failing check_line_text, a line height outside [8, 1024], a font without a glyph
  // for any character, a line wider than max_line_width with OverflowPolicy::kError. Thread-safe.
  Result<GlyphLine> render(const std::string& utf8, int64_t line_height, int64_t max_line_width, int64_t downscale,
                           int64_t patch, OverflowPolicy policy);

 private:
  struct Impl;
  explicit GlyphLineRenderer(std::unique_ptr<Impl> impl, std::string path);
  std::unique_ptr<Impl> impl_;
  std::string font_path_;
};

}  // namespace quill
