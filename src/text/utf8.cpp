#include "text/utf8.h"

#include <cstdio>

namespace quill {

int utf8_decode(std::string_view s, size_t i, uint32_t* cp) {
  if (i >= s.size()) return 0;
  const auto b = [&](size_t k) { return static_cast<unsigned char>(s[k]); };
  const unsigned char c = b(i);
  int len;
  uint32_t v;
  if (c < 0x80) {
    *cp = c;
    return 1;
  }
  if ((c & 0xe0) == 0xc0) {
    len = 2;
    v = c & 0x1f;
  } else if ((c & 0xf0) == 0xe0) {
    len = 3;
    v = c & 0x0f;
  } else if ((c & 0xf8) == 0xf0) {
    len = 4;
    v = c & 0x07;
  } else {
    return 0;
  }
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

std::string utf8_encode(uint32_t cp) {
  std::string s;
  if (cp < 0x80) {
    s += char(cp);
  } else if (cp < 0x800) {
    s += char(0xc0 | (cp >> 6));
    s += char(0x80 | (cp & 0x3f));
  } else if (cp < 0x10000) {
    s += char(0xe0 | (cp >> 12));
    s += char(0x80 | ((cp >> 6) & 0x3f));
    s += char(0x80 | (cp & 0x3f));
  } else {
    s += char(0xf0 | (cp >> 18));
    s += char(0x80 | ((cp >> 12) & 0x3f));
    s += char(0x80 | ((cp >> 6) & 0x3f));
    s += char(0x80 | (cp & 0x3f));
  }
  return s;
}

bool is_valid_utf8(std::string_view s) {
  for (size_t i = 0; i < s.size();) {
    uint32_t cp;
    const int n = utf8_decode(s, i, &cp);
    if (n == 0) return false;
    i += size_t(n);
  }
  return true;
}

bool is_blank_code_point(uint32_t cp) {
  switch (cp) {
    case 0x20:
    case 0xa0:
    case 0xad:
    case 0x034f:
    case 0x1680:
    case 0x180e:
    case 0x2028:
    case 0x2029:
    case 0x202f:
    case 0x205f:
    case 0x3000:
    case 0xfeff:
      return true;
    default:
      return (cp >= 0x09 && cp <= 0x0d) || (cp >= 0x2000 && cp <= 0x200f) || (cp >= 0x2060 && cp <= 0x2064);
  }
}

namespace {

bool is_control(uint32_t cp) { return cp < 0x20 || (cp >= 0x7f && cp <= 0x9f); }

}  // namespace

std::string describe_code_point(uint32_t cp) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "U+%04X", unsigned(cp));
  std::string s = buf;
  if (!is_control(cp) && !is_blank_code_point(cp)) s += " '" + utf8_encode(cp) + "'";
  return s;
}

Status check_line_text(std::string_view text) {
  bool any_visible = false;
  size_t index = 0;  // 1-based character position, for the messages
  for (size_t i = 0; i < text.size(); ++index) {
    uint32_t cp;
    const int n = utf8_decode(text, i, &cp);
    if (n == 0) return invalid_argument("the text is not valid UTF-8 (bad byte sequence at byte offset ", i, ")");
    if (cp == '\n' || cp == '\r' || cp == 0x2028 || cp == 0x2029)
      return invalid_argument("the text must be one line, but character ", index + 1, " is a line break (",
                              describe_code_point(cp), ")");
    if (is_control(cp))
      return invalid_argument("the text contains the control character ", describe_code_point(cp), " at position ",
                              index + 1, cp == '\t' ? "; use spaces instead of tabs" : "");
    any_visible = any_visible || !is_blank_code_point(cp);
    i += size_t(n);
  }
  if (!any_visible)
    return invalid_argument(text.empty() ? "the text is empty"
                                         : "the text is empty (only whitespace or invisible characters)");
  return Status::ok();
}

}  // namespace quill
