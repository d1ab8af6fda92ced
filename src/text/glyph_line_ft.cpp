// The glyph-line renderer proper: HarfBuzz shapes, FreeType rasterises (hinted, 8-bit coverage).
// Built only with FreeType + HarfBuzz; see no_glyph_line.cpp for the stubs otherwise.
#include <ft2build.h>
#include FT_FREETYPE_H
#include <hb-ft.h>
#include <hb.h>
#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <mutex>

#include "text/glyph_line.h"

namespace quill {

namespace {

// 26.6 fixed point to whole pixels, rounded to nearest. Offsets can be negative (marks below the
// baseline), so this must floor: in C++20 >> of a negative value is an arithmetic shift.
int64_t px_from_26_6(int64_t v) { return (v + 32) >> 6; }

Status check_line_height(int64_t h) {
  if (h < kMinLineHeight || h > kMaxLineHeight)
    return invalid_argument("line height ", h, " out of range [", kMinLineHeight, ", ", kMaxLineHeight, "]");
  return Status::ok();
}

Status check_font_file(const std::string& path) {
  struct stat sb {};
  if (::stat(path.c_str(), &sb) != 0) {
    const int e = errno;
    if (e == ENOENT) return not_found("font file does not exist").with_file(path);
    return io_error("cannot access the font file: ", std::strerror(e)).with_file(path);
  }
  if (!S_ISREG(sb.st_mode)) return invalid_argument("the font path is not a regular file").with_file(path);
  if (sb.st_size == 0) return invalid_file("the font file is empty (0 bytes)").with_file(path);
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (!f) return io_error("cannot read the font file: ", std::strerror(errno)).with_file(path);
  std::fclose(f);
  return Status::ok();
}

std::string list_code_points(const std::vector<uint32_t>& cps, size_t max_shown) {
  std::string s;
  for (size_t i = 0; i < cps.size() && i < max_shown; ++i) s += (i ? ", " : "") + describe_code_point(cps[i]);
  if (cps.size() > max_shown) s += ", ...";
  return s;
}

constexpr size_t kMaxMissingListed = 8;

}  // namespace

struct GlyphLineRenderer::Impl {
  FT_Library lib = nullptr;
  FT_Face face = nullptr;
  hb_font_t* font = nullptr;
  int64_t size_px = -1;
  std::mutex mu;  // FreeType faces and the current pixel size are shared state

  ~Impl() {
    if (font) hb_font_destroy(font);
    if (face) FT_Done_Face(face);
    if (lib) FT_Done_FreeType(lib);
  }

  Status set_size(int64_t px) {
    if (px == size_px) return Status::ok();
    if (FT_Set_Pixel_Sizes(face, 0, FT_UInt(px)) != 0)
      return invalid_argument("the font cannot be sized to ", px, " px");
    hb_ft_font_changed(font);
    size_px = px;
    return Status::ok();
  }

  struct Shaped {
    std::vector<hb_glyph_info_t> info;
    std::vector<hb_glyph_position_t> pos;
    int64_t advance_px = 0;
    std::vector<uint32_t> missing;
  };

  // Shapes already-checked `text` at `px`; the caller holds `mu`. Fails when no visible character
  // has a glyph in the font.
  Result<Shaped> shape(const std::string& text, int64_t px) {
    QUILL_RETURN_IF_ERROR(set_size(px));
    hb_buffer_t* buf = hb_buffer_create();
    // Marks keep their own cluster, so a missing mark is reported as itself, not as its base.
    hb_buffer_set_cluster_level(buf, HB_BUFFER_CLUSTER_LEVEL_MONOTONE_CHARACTERS);
    hb_buffer_set_flags(buf, hb_buffer_flags_t(HB_BUFFER_FLAG_BOT | HB_BUFFER_FLAG_EOT));
    hb_buffer_add_utf8(buf, text.data(), int(text.size()), 0, int(text.size()));
    hb_buffer_guess_segment_properties(buf);
    hb_shape(font, buf, nullptr, 0);
    unsigned n = 0;
    hb_glyph_info_t* info = hb_buffer_get_glyph_infos(buf, &n);
    hb_glyph_position_t* pos = hb_buffer_get_glyph_positions(buf, &n);
    Shaped s;
    s.info.assign(info, info + n);
    s.pos.assign(pos, pos + n);
    hb_buffer_destroy(buf);
    int64_t adv = 0;
    for (const auto& p : s.pos) adv += p.x_advance;
    s.advance_px = (adv + 63) / 64;
    // Characters the font lacks come out as glyph 0 (.notdef); cluster = byte offset in `text`.
    size_t visible = 0, notdef = 0;
    for (const auto& g : s.info) {
      uint32_t cp = ' ';
      utf8_decode(text, g.cluster, &cp);
      if (is_blank_code_point(cp)) continue;
      ++visible;
      if (g.codepoint != 0) continue;
      ++notdef;
      if (s.missing.size() < kMaxMissingListed && std::find(s.missing.begin(), s.missing.end(), cp) == s.missing.end())
        s.missing.push_back(cp);
    }
    if (visible > 0 && notdef == visible)
      return invalid_argument(
          "the font has no glyph for any character of the text (unsupported: ", list_code_points(s.missing, 5), ")");
    return s;
  }
};

GlyphLineRenderer::GlyphLineRenderer(std::unique_ptr<Impl> impl, std::string path)
    : impl_(std::move(impl)), font_path_(std::move(path)) {}
GlyphLineRenderer::~GlyphLineRenderer() = default;

Result<std::unique_ptr<GlyphLineRenderer>> GlyphLineRenderer::create(const std::string& font_path) {
  std::string path = font_path.empty() ? default_font_path() : font_path;
  if (path.empty()) {
    std::string looked;
    for (const std::string& p : default_font_candidates()) looked += (looked.empty() ? "" : ", ") + p;
    return not_found("no default font found (install Debian's fonts-dejavu-core, or pass a TTF/OTF font); looked in ",
                     looked);
  }
  QUILL_RETURN_IF_ERROR(check_font_file(path));
  auto impl = std::make_unique<Impl>();
  if (FT_Init_FreeType(&impl->lib) != 0) return internal_error("FreeType failed to initialise");
  if (const FT_Error e = FT_New_Face(impl->lib, path.c_str(), 0, &impl->face); e != 0)
    return invalid_file("not a font FreeType can read (TTF/OTF expected; FreeType error ", e, ")").with_file(path);
  if (!FT_IS_SCALABLE(impl->face)) return unsupported("bitmap-only fonts are not supported").with_file(path);
  impl->font = hb_ft_font_create_referenced(impl->face);
  return std::unique_ptr<GlyphLineRenderer>(new GlyphLineRenderer(std::move(impl), path));
}

Result<int64_t> GlyphLineRenderer::measure(const std::string& text, int64_t line_height) {
  QUILL_RETURN_IF_ERROR(check_line_text(text));
  QUILL_RETURN_IF_ERROR(check_line_height(line_height));
  const GlyphLayout layout = glyph_layout(line_height);
  std::lock_guard<std::mutex> lock(impl_->mu);
  QUILL_ASSIGN_OR_RETURN(auto shaped, impl_->shape(text, layout.font_px));
  return shaped.advance_px + 2 * layout.margin;
}

Result<GlyphLine> GlyphLineRenderer::render(const std::string& text, int64_t line_height, int64_t max_line_width,
                                            int64_t downscale, int64_t patch, OverflowPolicy policy) {
  QUILL_RETURN_IF_ERROR(check_line_text(text));
  QUILL_RETURN_IF_ERROR(check_line_height(line_height));
  const GlyphLayout layout = glyph_layout(line_height);
  // One lock for shaping and rasterising: the face's pixel size must not change in between.
  std::lock_guard<std::mutex> lock(impl_->mu);
  QUILL_ASSIGN_OR_RETURN(auto shaped, impl_->shape(text, layout.font_px));
  const int64_t natural = shaped.advance_px + 2 * layout.margin;
  QUILL_ASSIGN_OR_RETURN(WidthBucket bucket,
                         width_bucket(natural, line_height, max_line_width, downscale, patch, policy));
  GlyphLine out;
  out.width = bucket.canvas_width;
  out.height = line_height;
  out.bucket = bucket;
  out.glyph_count = int64_t(shaped.info.size());
  out.missing = shaped.missing;
  std::vector<uint8_t> ink(static_cast<size_t>(out.width * out.height), 0);

  FT_Face face = impl_->face;
  int64_t pen = layout.margin * 64;  // 26.6 fixed point
  for (size_t i = 0; i < shaped.info.size(); ++i) {
    const auto& g = shaped.info[i];
    const auto& p = shaped.pos[i];
    if (FT_Load_Glyph(face, g.codepoint, FT_LOAD_DEFAULT | FT_LOAD_NO_BITMAP) == 0 &&
        FT_Render_Glyph(face->glyph, FT_RENDER_MODE_NORMAL) == 0) {
      const FT_Bitmap& bm = face->glyph->bitmap;
      const int64_t x0 = px_from_26_6(pen + p.x_offset) + face->glyph->bitmap_left;
      const int64_t y0 = layout.baseline_y - px_from_26_6(p.y_offset) - face->glyph->bitmap_top;
      for (unsigned r = 0; r < bm.rows; ++r) {
        const int64_t y = y0 + int64_t(r);
        if (y < 0 || y >= out.height) continue;
        const uint8_t* row = bm.buffer + int64_t(r) * bm.pitch;
        for (unsigned c = 0; c < bm.width; ++c) {
          const int64_t x = x0 + int64_t(c);
          if (x < 0 || x >= out.width) continue;  // clipped (OverflowPolicy::kClamp, or overhang)
          uint8_t& dst = ink[size_t(y * out.width + x)];
          dst = std::max(dst, row[c]);
        }
      }
    }
    pen += p.x_advance;
  }
  out.gray.resize(ink.size());
  for (size_t i = 0; i < ink.size(); ++i) out.gray[i] = uint8_t(255 - ink[i]);
  return out;
}

}  // namespace quill
