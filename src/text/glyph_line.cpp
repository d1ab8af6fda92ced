// The parts of the glyph-line renderer that need no font library: the layout rule and the
// default font lookup. The renderer itself is glyph_line_ft.cpp (FreeType + HarfBuzz).
#include "text/glyph_line.h"

#include <sys/stat.h>

#include <algorithm>
#include <cmath>

namespace quill {

GlyphLayout glyph_layout(int64_t line_height) {
  GlyphLayout l;
  l.font_px = std::max<int64_t>(1, std::llround(0.625 * double(line_height)));
  l.baseline_y = std::llround(0.75 * double(line_height));
  l.margin = line_height / 8;
  return l;
}

const std::vector<std::string>& GlyphLineRenderer::default_font_candidates() {
  static const std::vector<std::string> kPaths = {
      "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf",    // Debian/Ubuntu fonts-dejavu-core
      "/usr/share/fonts/TTF/DejaVuSans.ttf",                // Arch
      "/usr/share/fonts/dejavu/DejaVuSans.ttf",             // Fedora (older)
      "/usr/share/fonts/dejavu-sans-fonts/DejaVuSans.ttf",  // Fedora
  };
  return kPaths;
}

std::string GlyphLineRenderer::default_font_path() {
  struct stat sb {};
  for (const std::string& p : default_font_candidates())
    if (::stat(p.c_str(), &sb) == 0 && S_ISREG(sb.st_mode)) return p;
  return {};
}

}  // namespace quill
