// Glyph-line rendering with FreeType + HarfBuzz: a line of UTF-8 text shaped (ligatures,
// combining marks, any script the font covers) and rasterised black on white into a canvas of
// the line height. The glyph line is the content conditioning of the line model, so training
// data must come from this same code (`quill render-line`) to be pixel-identical.
//
// Layout rule (documented, fixed): font pixel size = round(0.625 * line_height); baseline at
// y = round(0.75 * line_height) from the top; left margin = right margin = line_height / 8.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "quill/status.h"
#include "text/width_bucket.h"

namespace quill {

struct GlyphLine {
  int64_t width = 0, height = 0;  // canvas
  std::vector<uint8_t> gray;      // [height, width], 255 = paper, 0 = ink
  WidthBucket bucket;
};

class GlyphLineRenderer {
 public:
  // The default font when `font_path` is empty: DejaVu Sans from Debian's fonts-dejavu-core.
  static Result<std::unique_ptr<GlyphLineRenderer>> create(const std::string& font_path = "");
  static std::string default_font_path();  // empty when none of the known paths exists
  ~GlyphLineRenderer();

  const std::string& font_path() const { return font_path_; }

  // Natural width in pixels (margins included) of the shaped line at this height.
  Result<int64_t> measure(const std::string& utf8, int64_t line_height);
  // Renders into the bucket's canvas (see width_bucket.h for the rule and the overflow policy).
  Result<GlyphLine> render(const std::string& utf8, int64_t line_height, int64_t max_line_width, int64_t downscale,
                           int64_t patch, OverflowPolicy policy);

 private:
  struct Impl;
  explicit GlyphLineRenderer(std::unique_ptr<Impl> impl, std::string path);
  std::unique_ptr<Impl> impl_;
  std::string font_path_;
};

// Checks that `s` is valid UTF-8 (no overlongs, surrogates or code points past U+10FFFF).
bool is_valid_utf8(const std::string& s);

}  // namespace quill
