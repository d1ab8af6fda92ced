// Byte-level BPE against the `tokenizers` library (tools/make_tokenizer_fixtures.py): a Qwen2-style
// tokenizer (NFC, Qwen's pre-tokenizer regex, special and added tokens) trained to a 6k vocab, and
// 2400 strings with the ids `tokenizers` gives them.
#include <gtest/gtest.h>

#include <fstream>
#include <functional>

#include <nlohmann/json.hpp>

#include "io/gguf.h"
#include "support/test_util.h"
#include "text/bpe_tokenizer.h"

namespace quill {
namespace {

std::unique_ptr<BpeTokenizer> from_gguf(const std::string& path) {
  auto g = GgufFile::open(path);
  EXPECT_TRUE(g.is_ok()) << g.status().to_string();
  if (!g) return nullptr;
  auto parts = bpe_parts_from_gguf_metadata((*g)->metadata_json(), path);
  EXPECT_TRUE(parts.is_ok()) << parts.status().to_string();
  if (!parts) return nullptr;
  auto tok = BpeTokenizer::from_parts(*parts, path);
  EXPECT_TRUE(tok.is_ok()) << tok.status().to_string();
  return tok ? std::move(*tok) : nullptr;
}

class BpeTokenizerIds : public ::testing::TestWithParam<const char*> {};

// The same cases through tokenizer.json and through the vocab-only GGUF gguf-py wrote from it
// (tools/make_gguf_text_fixtures.py: tokenizer.ggml.tokens / token_type / merges, pre "qwen2").
TEST_P(BpeTokenizerIds, IdsEqualHuggingFaceTokenizers) {
  const std::string file = test::fixture(std::string("tokenizer/") + GetParam());
  std::unique_ptr<BpeTokenizer> t;
  if (file.ends_with(".gguf")) {
    t = from_gguf(file);
  } else {
    auto r = BpeTokenizer::from_file(file);
    ASSERT_TRUE(r.is_ok()) << r.status().to_string();
    t = std::move(*r);
  }
  ASSERT_TRUE(t);
  const std::unique_ptr<BpeTokenizer>* tok = &t;
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

INSTANTIATE_TEST_SUITE_P(Files, BpeTokenizerIds, ::testing::Values("tokenizer.json", "tokenizer.gguf"),
                         [](const auto& info) { return std::string(info.param).ends_with(".gguf") ? "Gguf" : "Json"; });

TEST(BpeTokenizer, GgufMetadataIsCheckedNamingTheKey) {
  auto g = GgufFile::open(test::fixture("tokenizer/tokenizer.gguf")).value();
  const nlohmann::json good = g->metadata_json();
  auto expect_error = [&](const std::function<void(nlohmann::json&)>& edit, const char* phrase) {
    nlohmann::json m = good;
    edit(m);
    auto p = bpe_parts_from_gguf_metadata(m, "t.gguf");
    ASSERT_FALSE(p.is_ok()) << phrase;
    EXPECT_NE(p.status().to_string().find(phrase), std::string::npos) << p.status().to_string();
  };
  expect_error([](nlohmann::json& m) { m["tokenizer.ggml.model"] = "llama"; }, "only \"gpt2\"");
  expect_error([](nlohmann::json& m) { m["tokenizer.ggml.pre"] = "llama-bpe"; }, "tokenizer.ggml.pre");
  expect_error([](nlohmann::json& m) { m.erase("tokenizer.ggml.pre"); }, "(missing)");
  expect_error([](nlohmann::json& m) { m["tokenizer.ggml.token_type"].erase(0); }, "one type per token");
  expect_error([](nlohmann::json& m) { m["tokenizer.ggml.merges"][3] = "nospace"; }, "merges[3]");
  expect_error([](nlohmann::json& m) { m["tokenizer.ggml.tokens"][7] = 5; }, "tokens[7]");
  // A merge of tokens that are not in the vocabulary is refused when the tokenizer is built.
  nlohmann::json m = good;
  m["tokenizer.ggml.merges"][0] = "\u00e5\u00e5\u00e5 zzzz";
  auto parts = bpe_parts_from_gguf_metadata(m, "t.gguf");
  ASSERT_TRUE(parts.is_ok());
  EXPECT_FALSE(BpeTokenizer::from_parts(*parts, "t.gguf").is_ok());
}

// tokenizer.json fields of the wrong type are errors naming the field, never an exception out of
// the JSON library (found by fuzz/bpe_tokenizer_fuzz: a boolean pre-tokenizer "type" threw
// nlohmann's type_error past every caller).
TEST(BpeTokenizer, JsonFieldsOfTheWrongTypeAreErrorsNamingTheField) {
  std::ifstream f(test::fixture("tokenizer/tokenizer.json"));
  const nlohmann::json good = nlohmann::json::parse(f);
  auto expect_error = [&](const std::function<void(nlohmann::json&)>& edit, const char* phrase) {
    nlohmann::json j = good;
    edit(j);
    Result<std::unique_ptr<BpeTokenizer>> tok = invalid_argument("not run");
    EXPECT_NO_THROW(tok = BpeTokenizer::from_json(j.dump(), "t.json")) << phrase;
    ASSERT_FALSE(tok.is_ok()) << phrase;
    EXPECT_NE(tok.status().to_string().find(phrase), std::string::npos) << tok.status().to_string();
  };
  expect_error([](nlohmann::json& j) { j["pre_tokenizer"]["type"] = true; }, "'type' must be a string, got true");
  expect_error([](nlohmann::json& j) { j["pre_tokenizer"]["pretokenizers"][0]["behavior"] = 3; }, "'behavior'");
  expect_error([](nlohmann::json& j) { j["pre_tokenizer"]["pretokenizers"][0]["invert"] = "no"; }, "'invert'");
  expect_error([](nlohmann::json& j) { j["pre_tokenizer"]["pretokenizers"][1]["use_regex"] = 1; }, "'use_regex'");
  expect_error([](nlohmann::json& j) { j["pre_tokenizer"]["pretokenizers"][1]["add_prefix_space"] = "x"; },
               "'add_prefix_space'");
  expect_error([](nlohmann::json& j) { j["normalizer"] = {{"type", 7}}; }, "'type' must be a string, got 7");
  expect_error([](nlohmann::json& j) { j["normalizer"] = nlohmann::json::object(); }, "normalizer {}");
  expect_error([](nlohmann::json& j) { j["added_tokens"][0]["lstrip"] = true; }, "with lstrip");
}

TEST(BpeTokenizer, GgufPadFillersAreNotAddedTokens) {
  // convert_hf_to_gguf.py writes "[PAD<id>]" (USER_DEFINED) for ids past the tokenizer's own, up to
  // the model's vocab_size; the tokenizer it came from never matches them in text, so neither does
  // this one. A user-defined token that is not such a filler is matched whole.
  auto g = GgufFile::open(test::fixture("tokenizer/tokenizer.gguf")).value();
  nlohmann::json m = g->metadata_json();
  const int64_t n = int64_t(m["tokenizer.ggml.tokens"].size());
  m["tokenizer.ggml.tokens"].push_back("[PAD" + std::to_string(n) + "]");
  m["tokenizer.ggml.token_type"].push_back(4);
  m["tokenizer.ggml.tokens"].push_back("[PAD7]");
  m["tokenizer.ggml.token_type"].push_back(4);
  auto parts = bpe_parts_from_gguf_metadata(m, "t.gguf");
  ASSERT_TRUE(parts.is_ok()) << parts.status().to_string();
  auto tok = BpeTokenizer::from_parts(*parts, "t.gguf").value();
  auto json = BpeTokenizer::from_file(test::fixture("tokenizer/tokenizer.json")).value();
  const std::string filler = "a [PAD" + std::to_string(n) + "] b";
  EXPECT_EQ(tok->encode(filler).value(), json->encode(filler).value());
  EXPECT_EQ(tok->encode("x[PAD7]").value().back(), int32_t(n + 1));
  EXPECT_EQ(tok->vocab_size(), n + 2);
}

}  // namespace
}  // namespace quill
