#include "text/glyph_line.h"

#include <ft2build.h>
#include FT_FREETYPE_H
#include <hb-ft.h>
#include <hb.h>
#include <sys/stat.h>

#include <algorithm>
#include <cmath>
#include <mutex>

namespace quill {

namespace {

const char* const kDefaultFonts[] = {
    "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf",
    "/usr/share/fonts/TTF/DejaVuSans.ttf",
    "/usr/share/fonts/dejavu/DejaVuSans.ttf",
};

int64_t font_px(int64_t line_height) { return std::max<int64_t>(1, std::llround(0.625 * double(line_height))); }
int64_t baseline_y(int64_t line_height) { return std::llround(0.75 * double(line_height)); }
int64_t margin(int64_t line_height) { return line_height / 8; }

// Decodes one UTF-8 code point at s[i]; returns its length or 0 when invalid.
int utf8_decode(const std::string& s, size_t i, uint32_t* cp) {
  const auto b = [&](size_t k) { return static_cast<unsigned char>(s[k]); };
  const unsigned char c = b(i);
  int len;
  uint32_t v;
  if (c < 0x80) { *cp = c; return 1; }
  if ((c & 0xe0) == 0xc0) { len = 2; v = c & 0x1f; }
  else if ((c & 0xf0) == 0xe0) { len = 3; v = c & 0x0f; }
  else if ((c & 0xf8) == 0xf0) { len = 4; v = c & 0x07; }
  else return 0;
  if (i + size_t(len) > s.size()) return 0;
  for (int k = 1; k < len; ++k) {
    if ((b(i + size_t(k)) & 0xc0) != 0x80) return 0;
    v = (v << 6) | (b(i + size_t(k)) & 0x3f);
  }
  static const uint32_t kMin[5] = {0, 0, 0x80, 0x800, 0x10000};
  if (v < kMin[len] || v > 0x10ffff || (v >= 0xd800 && v <= 0xdfff)) return 0;
  *cp = v;
  return len;
}

std::string utf8_of(uint32_t cp) {
  std::string s;
  if (cp < 0x80) s += char(cp);
  else if (cp < 0x800) { s += char(0xc0 | (cp >> 6)); s += char(0x80 | (cp & 0x3f)); }
  else if (cp < 0x10000) { s += char(0xe0 | (cp >> 12)); s += char(0x80 | ((cp >> 6) & 0x3f)); s += char(0x80 | (cp & 0x3f)); }
  else { s += char(0xf0 | (cp >> 18)); s += char(0x80 | ((cp >> 12) & 0x3f)); s += char(0x80 | ((cp >> 6) & 0x3f)); s += char(0x80 | (cp & 0x3f)); }
  return s;
}

}  // namespace

bool is_valid_utf8(const std::string& s) {
  for (size_t i = 0; i < s.size();) {
    uint32_t cp;
    const int n = utf8_decode(s, i, &cp);
    if (n == 0) return false;
    i += size_t(n);
  }
  return true;
}

struct GlyphLineRenderer::Impl {
  FT_Library lib = nullptr;
  FT_Face face = nullptr;
  hb_font_t* font = nullptr;
  int64_t size_px = -1;
  std::mutex mu;  // FreeType faces are not thread-safe

  ~Impl() {
    if (font) hb_font_destroy(font);
    if (face) FT_Done_Face(face);
    if (lib) FT_Done_FreeType(lib);
  }

  Status set_size(int64_t px) {
    if (px == size_px) return Status::ok();
    if (FT_Set_Pixel_Sizes(face, 0, FT_UInt(px)) != 0) return invalid_argument("the font cannot be sized to ", px, " px");
    hb_ft_font_changed(font);
    size_px = px;
    return Status::ok();
  }

  struct Shaped {
    std::vector<hb_glyph_info_t> info;
    std::vector<hb_glyph_position_t> pos;
    int64_t advance_px = 0;
  };

  // Shapes `text`; fails when no visible character has a glyph in the font.
  Result<Shaped> shape(const std::string& text) {
    hb_buffer_t* buf = hb_buffer_create();
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
    std::string missing;
    size_t visible = 0, shown = 0;
    for (const auto& g : s.info) {
      uint32_t cp = ' ';
      utf8_decode(text, g.cluster, &cp);
      if (cp == ' ' || cp == '\t') continue;
      ++visible;
      if (g.codepoint == 0) {
        if (shown++ < 5) {
          if (!missing.empty()) missing.append(", ");
          missing.append(1, '\'').append(utf8_of(cp)).append(1, '\'');
        }
      }
    }
    if (visible > 0 && shown == visible)
      return invalid_argument("the font has no glyph for any character of the text (e.g. ", missing, ")");
    return s;
  }
};

GlyphLineRenderer::GlyphLineRenderer(std::unique_ptr<Impl> impl, std::string path)
    : impl_(std::move(impl)), font_path_(std::move(path)) {}
GlyphLineRenderer::~GlyphLineRenderer() = default;

std::string GlyphLineRenderer::default_font_path() {
  struct stat sb {};
  for (const char* p : kDefaultFonts)
    if (::stat(p, &sb) == 0 && S_ISREG(sb.st_mode)) return p;
  return {};
}

Result<std::unique_ptr<GlyphLineRenderer>> GlyphLineRenderer::create(const std::string& font_path) {
  std::string path = font_path.empty() ? default_font_path() : font_path;
  if (path.empty())
    return not_found("no default font found (install Debian's fonts-dejavu-core); looked in ", kDefaultFonts[0], ", ",
                     kDefaultFonts[1], ", ", kDefaultFonts[2]);
  struct stat sb {};
  if (::stat(path.c_str(), &sb) != 0) return not_found("font file does not exist").with_file(path);
  auto impl = std::make_unique<Impl>();
  if (FT_Init_FreeType(&impl->lib) != 0) return internal_error("FreeType failed to initialise");
  if (FT_New_Face(impl->lib, path.c_str(), 0, &impl->face) != 0)
    return invalid_file("not a font FreeType can read (TTF/OTF expected)").with_file(path);
  if (!FT_IS_SCALABLE(impl->face)) return unsupported("bitmap-only fonts are not supported").with_file(path);
  impl->font = hb_ft_font_create_referenced(impl->face);
  return std::unique_ptr<GlyphLineRenderer>(new GlyphLineRenderer(std::move(impl), path));
}

Result<int64_t> GlyphLineRenderer::measure(const std::string& text, int64_t line_height) {
  if (!is_valid_utf8(text)) return invalid_argument("the text is not valid UTF-8");
  if (text.find_first_not_of(" \t\r\n") == std::string::npos) return invalid_argument("the text is empty");
  if (line_height < 8 || line_height > 1024) return invalid_argument("line height ", line_height, " out of range [8, 1024]");
  std::lock_guard<std::mutex> lock(impl_->mu);
  QUILL_RETURN_IF_ERROR(impl_->set_size(font_px(line_height)));
  QUILL_ASSIGN_OR_RETURN(auto shaped, impl_->shape(text));
  return shaped.advance_px + 2 * margin(line_height);
}

Result<GlyphLine> GlyphLineRenderer::render(const std::string& text, int64_t line_height, int64_t max_line_width,
                                            int64_t downscale, int64_t patch, OverflowPolicy policy) {
  if (text.find('\n') != std::string::npos) return invalid_argument("the text must be one line (it contains a newline)");
  QUILL_ASSIGN_OR_RETURN(int64_t natural, measure(text, line_height));
  QUILL_ASSIGN_OR_RETURN(WidthBucket bucket, width_bucket(natural, line_height, max_line_width, downscale, patch, policy));
  GlyphLine out;
  out.width = bucket.canvas_width;
  out.height = line_height;
  out.bucket = bucket;
  std::vector<uint8_t> ink(static_cast<size_t>(out.width * out.height), 0);

  std::lock_guard<std::mutex> lock(impl_->mu);
  QUILL_ASSIGN_OR_RETURN(auto shaped, impl_->shape(text));
  FT_Face face = impl_->face;
  int64_t pen = int64_t(margin(line_height)) * 64;  // 26.6 fixed point
  const int64_t base = baseline_y(line_height);
  for (size_t i = 0; i < shaped.info.size(); ++i) {
    const auto& g = shaped.info[i];
    const auto& p = shaped.pos[i];
    if (FT_Load_Glyph(face, g.codepoint, FT_LOAD_DEFAULT | FT_LOAD_NO_BITMAP) == 0 &&
        FT_Render_Glyph(face->glyph, FT_RENDER_MODE_NORMAL) == 0) {
      const FT_Bitmap& bm = face->glyph->bitmap;
      const int64_t x0 = (pen + p.x_offset + 32) / 64 + face->glyph->bitmap_left;
      const int64_t y0 = base - (p.y_offset + 32) / 64 - face->glyph->bitmap_top;
      for (unsigned r = 0; r < bm.rows; ++r) {
        const int64_t y = y0 + int64_t(r);
        if (y < 0 || y >= out.height) continue;
        for (unsigned c = 0; c < bm.width; ++c) {
          const int64_t x = x0 + int64_t(c);
          if (x < 0 || x >= out.width) continue;
          uint8_t& dst = ink[size_t(y * out.width + x)];
          dst = std::max(dst, bm.buffer[r * unsigned(bm.pitch) + c]);
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
