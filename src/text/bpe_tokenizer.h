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
#include <utility>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "quill/status.h"

namespace quill {

// What a byte-level BPE tokenizer is made of, whichever file it came from.
struct BpeParts {
  std::vector<std::pair<std::string, int32_t>> vocab;         // byte-level spelled token -> id
  std::vector<std::pair<std::string, std::string>> merges;    // best (rank 0) first
  std::vector<std::pair<std::string, int32_t>> added;         // matched whole in the text, as written
  bool nfc = false;                                           // NFC-normalise text outside added tokens
  bool ignore_merges = false;                                 // a whole pre-token in the vocab wins
  std::string pattern;                                        // pre-tokenizer regex, "Isolated"; "" = none
};

// GGUF tokenizer metadata (`tokenizer.ggml.*`, llama.cpp's convert_hf_to_gguf.py) as BpeParts:
// model "gpt2" (byte-level BPE), the pre-tokenizer regex chosen by `tokenizer.ggml.pre` (the Qwen2
// family: "qwen2", "deepseek-r1-qwen"; NFC as Qwen2's tokenizer.json), tokens of type CONTROL (3)
// and USER_DEFINED (4) as added tokens, except the "[PAD<id>]" fillers the converter writes for ids
// the tokenizer does not use. Other vocabularies are refused naming the key.
Result<BpeParts> bpe_parts_from_gguf_metadata(const nlohmann::json& meta, const std::string& source);
// True when GGUF metadata carries a tokenizer (tokenizer.ggml.tokens).
bool gguf_metadata_has_tokenizer(const nlohmann::json& meta);

class BpeTokenizer {
 public:
  static Result<std::unique_ptr<BpeTokenizer>> from_file(const std::string& path);
  // `source` names the document in messages.
  static Result<std::unique_ptr<BpeTokenizer>> from_json(std::string_view json, const std::string& source);
  static Result<std::unique_ptr<BpeTokenizer>> from_parts(const BpeParts& parts, const std::string& source);
  virtual ~BpeTokenizer() = default;

  // Token ids of `utf8` (must be valid UTF-8), added / special tokens included.
  virtual Result<std::vector<int32_t>> encode(std::string_view utf8) const = 0;
  // The id of a vocabulary or added token, if it has one.
  virtual std::optional<int32_t> token_to_id(std::string_view token) const = 0;
  virtual int64_t vocab_size() const = 0;  // the largest id + 1
};

}  // namespace quill
