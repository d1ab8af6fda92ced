// libFuzzer target: the byte-level BPE tokenizer (text/bpe_tokenizer.h), both what it loads and
// what it encodes. The first input byte picks the mode:
//   bit 0 clear: the rest is a tokenizer.json, then after an optional NUL a text to encode with it;
//   bit 0 set:   the rest is a text to encode with the repository's Qwen2-style test tokenizer
//                (tests/fixtures/tokenizer/tokenizer.json: NFC, the Qwen2 Split regex on ICU,
//                ByteLevel, added tokens), loaded once.
// A tokenizer that loads must encode every valid UTF-8 text to ids inside its vocabulary and
// refuse invalid UTF-8 with an error; nothing may crash or throw.
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <string_view>

#include "fuzz_util.h"
#include "text/bpe_tokenizer.h"
#include "text/utf8.h"

using namespace quill;

namespace {

const BpeTokenizer& fixture_tokenizer() {
  static const BpeTokenizer* t = [] {
    const std::string path = QUILL_SOURCE_DIR "/tests/fixtures/tokenizer/tokenizer.json";
    auto tok = BpeTokenizer::from_file(path);
    if (!tok) {
      std::fprintf(stderr, "cannot load %s: %s\n", path.c_str(), tok.status().to_string().c_str());
      std::abort();
    }
    return tok->release();
  }();
  return *t;
}

void check_encode(const BpeTokenizer& tok, std::string_view text) {
  auto ids = tok.encode(text);
  if (!is_valid_utf8(text)) {
    if (ids) fuzz::fail("encoded invalid UTF-8 without an error");
    return;
  }
  if (!ids) {
    (void)ids.status().to_string();  // a refusal must at least describe itself
    return;
  }
  if (!text.empty() && ids->empty()) fuzz::fail("a non-empty text encoded to no tokens");
  for (int32_t id : *ids)
    if (id < 0 || id >= tok.vocab_size()) fuzz::fail("an encoded id is outside the vocabulary");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  const std::string_view rest(reinterpret_cast<const char*>(data + 1), size - 1);
  if (data[0] & 1) {
    check_encode(fixture_tokenizer(), rest);
    return 0;
  }
  const size_t nul = rest.find('\0');
  auto tok = BpeTokenizer::from_json(rest.substr(0, nul), "tokenizer.json");
  if (!tok) {
    (void)tok.status().to_string();
    return 0;
  }
  if (nul != std::string_view::npos) check_encode(**tok, rest.substr(nul + 1));
  return 0;
}
