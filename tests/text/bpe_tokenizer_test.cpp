// Byte-level BPE against the `tokenizers` library (tools/make_tokenizer_fixtures.py): a Qwen2-style
// tokenizer (NFC, Qwen's pre-tokenizer regex, special and added tokens) trained to a 6k vocab, and
// 2400 strings with the ids `tokenizers` gives them.
#include <gtest/gtest.h>

#include <fstream>

#include <nlohmann/json.hpp>

#include "support/test_util.h"
#include "text/bpe_tokenizer.h"

namespace quill {
namespace {

TEST(BpeTokenizer, IdsEqualHuggingFaceTokenizers) {
  auto tok = BpeTokenizer::from_file(test::fixture("tokenizer/tokenizer.json"));
  ASSERT_TRUE(tok.is_ok()) << tok.status().to_string();
  nlohmann::json j;
  std::ifstream(test::fixture("tokenizer/cases.json")) >> j;
  const auto& cases = j["cases"];
  ASSERT_GE(cases.size(), 2000u);
  int mismatches = 0;
  for (const auto& c : cases) {
    const std::string text = c["text"].get<std::string>();
    const std::vector<int32_t> want = c["ids"].get<std::vector<int32_t>>();
    auto got = (*tok)->encode(text);
    ASSERT_TRUE(got.is_ok()) << got.status().to_string() << " for " << nlohmann::json(text).dump();
    if (*got != want && ++mismatches <= 5)
      ADD_FAILURE() << "ids differ for " << nlohmann::json(text).dump() << "\n  want " << nlohmann::json(want).dump()
                    << "\n  got  " << nlohmann::json(*got).dump();
  }
  EXPECT_EQ(mismatches, 0) << "of " << cases.size();
  EXPECT_EQ((*tok)->token_to_id("<|im_start|>"), std::optional<int32_t>(1));
}

TEST(BpeTokenizer, RefusesWhatItDoesNotImplement) {
  const std::pair<const char*, const char*> bad[] = {
      {R"({"model": {"type": "WordPiece"}})", "only BPE"},
      {R"({"model": {"type": "BPE", "vocab": {}, "merges": [], "byte_fallback": true}})", "byte_fallback"},
      {R"({"normalizer": {"type": "Lowercase"}, "model": {"type": "BPE", "vocab": {}, "merges": []},
           "pre_tokenizer": {"type": "ByteLevel"}})", "normalizer"},
      {R"({"model": {"type": "BPE", "vocab": {"a": 0}, "merges": ["a b"]}})", "outside the vocab"},
      {R"({"model": {"type": "BPE", "vocab": {}, "merges": []}, "pre_tokenizer": {"type": "Whitespace"}})",
       "pre-tokenizer"},
  };
  for (const auto& [json, phrase] : bad) {
    auto t = BpeTokenizer::from_json(json, "t.json");
    ASSERT_FALSE(t.is_ok()) << json;
    EXPECT_NE(t.status().to_string().find(phrase), std::string::npos) << t.status().to_string();
  }
  auto tok = BpeTokenizer::from_file(test::fixture("tokenizer/tokenizer.json"));
  ASSERT_TRUE(tok.is_ok());
  EXPECT_FALSE((*tok)->encode("bad \xff byte").is_ok());
}

}  // namespace
}  // namespace quill
