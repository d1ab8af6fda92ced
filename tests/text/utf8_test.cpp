// The text checks every glyph line passes first (built without FreeType too).
#include "text/utf8.h"

#include <gtest/gtest.h>

namespace quill {
namespace {

std::string check(std::string_view s) {
  const Status st = check_line_text(s);
  return st.is_ok() ? "ok" : st.message();
}

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

TEST(Utf8, DecodesAndEncodesRoundTrip) {
  for (uint32_t cp : {0x41u, 0xe5u, 0x7ffu, 0x800u, 0x20acu, 0xffffu, 0x10000u, 0x1f600u, 0x10ffffu}) {
    const std::string s = utf8_encode(cp);
    uint32_t back = 0;
    EXPECT_EQ(utf8_decode(s, 0, &back), int(s.size())) << cp;
    EXPECT_EQ(back, cp);
    EXPECT_TRUE(is_valid_utf8(s));
  }
  EXPECT_EQ(utf8_encode(0xe5), "\xc3\xa5");
  EXPECT_EQ(utf8_encode(0x20ac), "\xe2\x82\xac");
}

TEST(Utf8, RejectsMalformedSequences) {
  for (const char* bad : {"\xff", "\xc3", "\xc3(", "\xc0\xaf" /* overlong '/' */, "\xe0\x80\xaf",
                          "\xed\xa0\x80" /* surrogate */, "\xf4\x90\x80\x80" /* > U+10FFFF */, "\x80"}) {
    EXPECT_FALSE(is_valid_utf8(bad)) << bad;
    uint32_t cp;
    EXPECT_EQ(utf8_decode(bad, 0, &cp), 0);
  }
  uint32_t cp;
  EXPECT_EQ(utf8_decode("a", 1, &cp), 0);  // past the end
}

TEST(Utf8, LineTextChecks) {
  EXPECT_EQ(check("Kongl. Maj:ts n\xc3\xa5"
                  "diga f\xc3\xb6rordning"),
            "ok");
  EXPECT_EQ(check(" a "), "ok");
  EXPECT_EQ(check("e\xcc\x81"), "ok");  // e + combining acute
  EXPECT_EQ(check(""), "the text is empty");
  EXPECT_TRUE(contains(check("   "), "only whitespace"));
  EXPECT_TRUE(
      contains(check("\xc2\xa0\xe2\x80\x8b\xe3\x80\x80\xef\xbb\xbf"), "only whitespace"));  // NBSP ZWSP U+3000 BOM
  const std::string bad = check("ab\xff");
  EXPECT_TRUE(contains(bad, "not valid UTF-8")) << bad;
  EXPECT_TRUE(contains(bad, "byte offset 2")) << bad;
  EXPECT_TRUE(contains(check("one\ntwo"), "one line")) << check("one\ntwo");
  EXPECT_TRUE(contains(check("one\r"), "one line"));
  EXPECT_TRUE(contains(check("a\xe2\x80\xa8"
                             "b"),
                       "U+2028"));
  const std::string tab = check("\xc3\xa5\tb");
  EXPECT_TRUE(contains(tab, "U+0009 at position 2")) << tab;
  EXPECT_TRUE(contains(tab, "tabs")) << tab;
  EXPECT_TRUE(contains(check(std::string("a\0b", 3)), "U+0000"));
  EXPECT_TRUE(contains(check("a\xc2\x85"), "U+0085"));  // C1 control (NEL)
  EXPECT_EQ(check_line_text("\x01").code(), ErrorCode::kInvalidArgument);
}

TEST(Utf8, DescribesCodePoints) {
  EXPECT_EQ(describe_code_point(0xe5), "U+00E5 '\xc3\xa5'");
  EXPECT_EQ(describe_code_point(0x9), "U+0009");
  EXPECT_EQ(describe_code_point(0x1f600), "U+1F600 '\xf0\x9f\x98\x80'");
}

}  // namespace
}  // namespace quill
