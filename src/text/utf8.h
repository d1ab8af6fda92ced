// UTF-8 decoding and the checks a line of text must pass before it is shaped. Plain code with no
// font library, so it is built (and its errors tested) even without FreeType/HarfBuzz.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "quill/status.h"

namespace quill {

// Decodes the code point starting at s[i]; returns its length in bytes, or 0 when the bytes there
// are not valid UTF-8 (truncated, overlong, surrogate, beyond U+10FFFF).
int utf8_decode(std::string_view s, size_t i, uint32_t* cp);
std::string utf8_encode(uint32_t cp);
// Checks that `s` is valid UTF-8 (no overlongs, surrogates or code points past U+10FFFF).
bool is_valid_utf8(std::string_view s);

// Whitespace and invisible format characters (ZWSP, ZWJ/ZWNJ, BOM, soft hyphen, ...): a line made
// only of these draws nothing.
bool is_blank_code_point(uint32_t cp);

// "U+00E5 'å'", or "U+0009" for characters that do not print.
std::string describe_code_point(uint32_t cp);

// What a glyph line accepts: valid UTF-8, one line, no control characters (tabs included: they
// have no glyph), at least one character that is not blank. Errors are kInvalidArgument and say
// where the offending character is.
Status check_line_text(std::string_view text);

}  // namespace quill
