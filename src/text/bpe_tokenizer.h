// Byte-level BPE tokenizers from a Hugging Face `tokenizer.json` (GPT-2 / Qwen2 family), encoding
// exactly as the `tokenizers` library does for the configurations it accepts:
//   added tokens   split off first (leftmost-longest over their contents, as written);
//   normalizer     none or NFC (ICU);
//   pre-tokenizer  Split(Regex, "Isolated") and/or ByteLevel (its GPT-2 regex when use_regex);
//                  the regex runs on ICU's engine, so \p{L}, \p{N}, (?i:...) and (?!\S) have
//                  Unicode's real categories;
//   model          BPE over byte-level symbols, lowest merge rank first (ignore_merges honoured).
// Anything else in the file (other normalizers, unk / byte fallback, dropout, lstrip/rstrip
// added tokens, ...) is refused at load with the field named, never approximated.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "quill/status.h"

namespace quill {

class BpeTokenizer {
 public:
  static Result<std::unique_ptr<BpeTokenizer>> from_file(const std::string& path);
  // `source` names the document in messages.
  static Result<std::unique_ptr<BpeTokenizer>> from_json(std::string_view json, const std::string& source);
  virtual ~BpeTokenizer() = default;

  // Token ids of `utf8` (must be valid UTF-8), added / special tokens included.
  virtual Result<std::vector<int32_t>> encode(std::string_view utf8) const = 0;
  // The id of a vocabulary or added token, if it has one.
  virtual std::optional<int32_t> token_to_id(std::string_view token) const = 0;
  virtual int64_t vocab_size() const = 0;  // the largest id + 1
};

}  // namespace quill
