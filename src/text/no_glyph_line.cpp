// Without FreeType/HarfBuzz (QUILL_HAVE_TEXT unset) glyph_line_ft.cpp is not built; these stubs
// keep the API linkable and say clearly what is missing.
#ifndef QUILL_HAVE_TEXT

#include "text/glyph_line.h"

namespace quill {

struct GlyphLineRenderer::Impl {};

GlyphLineRenderer::GlyphLineRenderer(std::unique_ptr<Impl> impl, std::string path)
    : impl_(std::move(impl)), font_path_(std::move(path)) {}
GlyphLineRenderer::~GlyphLineRenderer() = default;

namespace {
Status not_built() {
  return unsupported(
      "glyph-line rendering was not built (FreeType/HarfBuzz not found at configure time; "
      "install libfreetype-dev and libharfbuzz-dev and reconfigure)");
}
}  // namespace

Result<std::unique_ptr<GlyphLineRenderer>> GlyphLineRenderer::create(const std::string&) { return not_built(); }
Result<int64_t> GlyphLineRenderer::measure(const std::string&, int64_t) { return not_built(); }
Result<GlyphLine> GlyphLineRenderer::render(const std::string&, int64_t, int64_t, int64_t, int64_t, OverflowPolicy) {
  return not_built();
}

}  // namespace quill

#endif  // QUILL_HAVE_TEXT
