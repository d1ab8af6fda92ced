#include "text/bpe_tokenizer.h"

#include <unicode/normalizer2.h>
#include <unicode/regex.h>
#include <unicode/unistr.h>

#include <algorithm>
#include <array>
#include <fstream>
#include <limits>
#include <map>
#include <unordered_map>

#include "io/json_util.h"
#include "text/utf8.h"

namespace quill {

namespace {

// GPT-2's ByteLevel pre-tokenizer regex (used when ByteLevel has use_regex: true).
constexpr const char* kGpt2Pattern = R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";

// GPT-2's bytes_to_unicode: printable bytes map to themselves, the rest to U+0100 onwards.
std::vector<std::string> byte_symbols() {
  std::vector<int> bs;
  for (int b = '!'; b <= '~'; ++b) bs.push_back(b);
  for (int b = 0xA1; b <= 0xAC; ++b) bs.push_back(b);
  for (int b = 0xAE; b <= 0xFF; ++b) bs.push_back(b);
  std::vector<uint32_t> cp(256, 0);
  for (int b : bs) cp[size_t(b)] = uint32_t(b);
  uint32_t n = 0;
  for (int b = 0; b < 256; ++b)
    if (std::find(bs.begin(), bs.end(), b) == bs.end()) cp[size_t(b)] = 256 + n++;
  std::vector<std::string> out(256);
  for (int b = 0; b < 256; ++b) out[size_t(b)] = utf8_encode(cp[size_t(b)]);
  return out;
}

std::optional<std::pair<std::string, std::string>> split_merge(const std::string& s) {
  const size_t sp = s.find(' ');
  if (sp == std::string::npos) return std::nullopt;
  return std::make_pair(s.substr(0, sp), s.substr(sp + 1));
}

struct AddedToken {
  std::string content;
  int32_t id;
};

// obj[key] into `out` (kept when absent or null), checked by the shared config reader: another
// type is an error naming the key (nlohmann's value() would throw).
template <typename T>
Status read_field(const nlohmann::json& obj, const char* key, T& out, const std::string& src) {
  Status st = read_json_key(obj, key, out, "tokenizer.json");
  if (!st.is_ok()) st.with_file(src);
  return st;
}

// tokenizer.json -> BpeParts: refuses what the parts cannot express, naming the field.
Result<BpeParts> parse_tokenizer_json(const nlohmann::json& j, const std::string& src) {
  auto field = [&](const nlohmann::json& obj, const char* key) -> const nlohmann::json* {
    auto it = obj.find(key);
    return it == obj.end() || it->is_null() ? nullptr : &*it;
  };
  BpeParts parts;
  // model: BPE
  const nlohmann::json* model = field(j, "model");
  if (!model || !model->is_object()) return invalid_file("tokenizer.json has no model").with_file(src);
  if (const auto* t = field(*model, "type"); !t || *t != "BPE")
    return unsupported("tokenizer model ", t ? dump_json(*t) : "(none)", " (only BPE)").with_file(src);
  if (const auto* d = field(*model, "dropout"); d && !(d->is_number() && d->get<double>() == 0.0))
    return unsupported("BPE dropout ", dump_json(*d)).with_file(src);
  if (const auto* b = field(*model, "byte_fallback"); b && *b == true)
    return unsupported("BPE byte_fallback").with_file(src);
  for (const char* key : {"continuing_subword_prefix", "end_of_word_suffix"})
    if (const auto* v = field(*model, key); v && !(v->is_string() && v->get<std::string>().empty()))
      return unsupported("BPE ", key, " ", dump_json(*v)).with_file(src);
  if (const auto* im = field(*model, "ignore_merges")) parts.ignore_merges = im->is_boolean() && im->get<bool>();
  const nlohmann::json* vocab = field(*model, "vocab");
  if (!vocab || !vocab->is_object()) return invalid_file("BPE model has no vocab object").with_file(src);
  for (const auto& [tok, id] : vocab->items()) {
    if (!id.is_number_integer() || id.get<int64_t>() < 0 || id.get<int64_t>() > std::numeric_limits<int32_t>::max())
      return invalid_file("vocab id of ", dump_json(tok), " is not a non-negative integer").with_file(src);
    parts.vocab.emplace_back(tok, int32_t(id.get<int64_t>()));
  }
  const nlohmann::json* merges = field(*model, "merges");
  if (!merges || !merges->is_array()) return invalid_file("BPE model has no merges list").with_file(src);
  for (const auto& m : *merges) {
    if (m.is_string()) {  // "a b"
      auto ab = split_merge(m.get<std::string>());
      if (!ab) return invalid_file("merge ", dump_json(m), " is not \"a b\"").with_file(src);
      parts.merges.push_back(std::move(*ab));
    } else if (m.is_array() && m.size() == 2 && m[0].is_string() && m[1].is_string()) {
      parts.merges.emplace_back(m[0].get<std::string>(), m[1].get<std::string>());
    } else {
      return invalid_file("merge ", dump_json(m), " is neither \"a b\" nor [a, b]").with_file(src);
    }
  }
  // added tokens
  if (const auto* added = field(j, "added_tokens")) {
    if (!added->is_array()) return invalid_file("added_tokens is not a list").with_file(src);
    for (const auto& t : *added) {
      if (!t.is_object()) return invalid_file("added token ", dump_json(t), " is not an object").with_file(src);
      for (const char* flag : {"lstrip", "rstrip", "single_word"})
        if (const auto* f = field(t, flag); f && *f == true)
          return unsupported("added token ", dump_json(t), " with ", flag).with_file(src);
      if (!t.contains("content") || !t["content"].is_string() || !t.contains("id") || !t["id"].is_number_integer() ||
          t["id"].get<int64_t>() < 0 || t["id"].get<int64_t>() > std::numeric_limits<int32_t>::max())
        return invalid_file("added token without content or a valid id: ", dump_json(t)).with_file(src);
      parts.added.emplace_back(t["content"].get<std::string>(), int32_t(t["id"].get<int64_t>()));
    }
  }
  // normalizer
  if (const auto* n = field(j, "normalizer")) {
    if (!n->is_object()) return unsupported("normalizer ", dump_json(*n), " (none or NFC)").with_file(src);
    std::string type;
    QUILL_RETURN_IF_ERROR(read_field(*n, "type", type, src));
    if (type != "NFC") return unsupported("normalizer ", dump_json(*n), " (none or NFC)").with_file(src);
    parts.nfc = true;
  }
  // pre-tokenizer: [Split(Regex, Isolated)] + ByteLevel
  const nlohmann::json* pre = field(j, "pre_tokenizer");
  if (!pre || !pre->is_object()) return unsupported("a BPE tokenizer without a pre-tokenizer").with_file(src);
  std::vector<nlohmann::json> steps;
  std::string pre_type;
  QUILL_RETURN_IF_ERROR(read_field(*pre, "type", pre_type, src));
  if (pre_type == "Sequence" && pre->contains("pretokenizers") && (*pre)["pretokenizers"].is_array())
    steps.assign((*pre)["pretokenizers"].begin(), (*pre)["pretokenizers"].end());
  else
    steps.push_back(*pre);
  bool byte_level = false;
  for (const auto& s : steps) {
    if (!s.is_object()) return invalid_file("pre-tokenizer ", dump_json(s), " is not an object").with_file(src);
    std::string type;
    QUILL_RETURN_IF_ERROR(read_field(s, "type", type, src));
    if (type == "Split") {
      if (!parts.pattern.empty()) return unsupported("more than one Split pre-tokenizer").with_file(src);
      std::string behavior;
      bool invert = false;
      QUILL_RETURN_IF_ERROR(read_field(s, "behavior", behavior, src));
      QUILL_RETURN_IF_ERROR(read_field(s, "invert", invert, src));
      if (behavior != "Isolated" || invert)
        return unsupported("Split pre-tokenizer ", dump_json(s), " (only Isolated, not inverted)").with_file(src);
      if (!s.contains("pattern") || !s["pattern"].is_object() || !s["pattern"].contains("Regex") ||
          !s["pattern"]["Regex"].is_string())
        return unsupported("Split pattern ", dump_json(s.value("pattern", nlohmann::json())), " (only Regex)")
            .with_file(src);
      parts.pattern = s["pattern"]["Regex"].get<std::string>();
    } else if (type == "ByteLevel") {
      bool prefix_space = false, use_regex = true;
      QUILL_RETURN_IF_ERROR(read_field(s, "add_prefix_space", prefix_space, src));
      QUILL_RETURN_IF_ERROR(read_field(s, "use_regex", use_regex, src));
      if (prefix_space) return unsupported("ByteLevel add_prefix_space").with_file(src);
      if (use_regex) {
        if (!parts.pattern.empty()) return unsupported("a Split regex and ByteLevel's own regex").with_file(src);
        parts.pattern = kGpt2Pattern;
      }
      byte_level = true;
    } else {
      return unsupported("pre-tokenizer ", dump_json(type)).with_file(src);
    }
  }
  if (!byte_level) return unsupported("a BPE tokenizer without ByteLevel").with_file(src);
  return parts;
}

class BpeTokenizerImpl final : public BpeTokenizer {
 public:
  Status init(const BpeParts& parts, const std::string& src) {
    for (const auto& [tok, id] : parts.vocab) {
      if (id < 0) return invalid_file("vocab id of ", dump_json(tok), " is negative").with_file(src);
      vocab_.emplace(tok, id);
      max_id_ = std::max<int64_t>(max_id_, id);
    }
    int32_t rank = 0;
    for (const auto& [a, b] : parts.merges) {
      auto ia = vocab_.find(a), ib = vocab_.find(b), iab = vocab_.find(a + b);
      if (ia == vocab_.end() || ib == vocab_.end() || iab == vocab_.end())
        return invalid_file("merge ", dump_json(a + " " + b), " uses or makes a token outside the vocab")
            .with_file(src);
      merges_.emplace(pair_key(ia->second, ib->second), std::make_pair(rank++, iab->second));
    }
    for (const auto& [content, id] : parts.added) {
      if (content.empty()) return invalid_file("empty added token").with_file(src);
      if (id < 0) return invalid_file("added token ", dump_json(content), " has a negative id").with_file(src);
      added_.push_back({content, id});
      max_id_ = std::max<int64_t>(max_id_, id);
    }
    ignore_merges_ = parts.ignore_merges;
    if (parts.nfc) {
      UErrorCode err = U_ZERO_ERROR;
      nfc_ = icu::Normalizer2::getNFCInstance(err);
      if (U_FAILURE(err)) return internal_error("ICU NFC normaliser: ", u_errorName(err));
    }
    if (!parts.pattern.empty()) {
      UErrorCode err = U_ZERO_ERROR;
      UParseError pe{};
      regex_.reset(icu::RegexPattern::compile(icu::UnicodeString::fromUTF8(parts.pattern), 0, pe, err));
      if (U_FAILURE(err))
        return invalid_file("pre-tokenizer regex does not compile (", u_errorName(err), " at offset ", pe.offset,
                            "): ", parts.pattern)
            .with_file(src);
    }
    bytes_ = byte_symbols();
    for (int b = 0; b < 256; ++b) {
      auto it = vocab_.find(bytes_[size_t(b)]);
      byte_id_[size_t(b)] = it == vocab_.end() ? -1 : it->second;
    }
    // Added tokens: longest first at each position.
    std::stable_sort(added_.begin(), added_.end(),
                     [](const AddedToken& a, const AddedToken& b) { return a.content.size() > b.content.size(); });
    return Status::ok();
  }

  Result<std::vector<int32_t>> encode(std::string_view text) const override {
    if (!is_valid_utf8(text)) return invalid_argument("the text is not valid UTF-8");
    std::vector<int32_t> ids;
    size_t start = 0, i = 0;
    while (i < text.size()) {
      const AddedToken* hit = nullptr;
      for (const AddedToken& a : added_)
        if (text.compare(i, a.content.size(), a.content) == 0) {
          hit = &a;
          break;
        }
      if (!hit) {
        ++i;
        continue;
      }
      QUILL_RETURN_IF_ERROR(encode_segment(text.substr(start, i - start), ids));
      ids.push_back(hit->id);
      i += hit->content.size();
      start = i;
    }
    QUILL_RETURN_IF_ERROR(encode_segment(text.substr(start), ids));
    return ids;
  }

  std::optional<int32_t> token_to_id(std::string_view token) const override {
    for (const AddedToken& a : added_)
      if (a.content == token) return a.id;
    auto it = vocab_.find(std::string(token));
    if (it == vocab_.end()) return std::nullopt;
    return it->second;
  }
  int64_t vocab_size() const override { return max_id_ + 1; }

 private:
  static uint64_t pair_key(int32_t a, int32_t b) { return (uint64_t(uint32_t(a)) << 32) | uint32_t(b); }

  Status encode_segment(std::string_view seg, std::vector<int32_t>& ids) const {
    if (seg.empty()) return Status::ok();
    icu::UnicodeString u = icu::UnicodeString::fromUTF8(icu::StringPiece(seg.data(), int32_t(seg.size())));
    if (nfc_) {
      UErrorCode err = U_ZERO_ERROR;
      u = nfc_->normalize(u, err);
      if (U_FAILURE(err)) return internal_error("NFC normalisation failed: ", u_errorName(err));
    }
    if (!regex_) {
      std::string s;
      u.toUTF8String(s);
      return encode_word(s, ids);
    }
    UErrorCode err = U_ZERO_ERROR;
    std::unique_ptr<icu::RegexMatcher> m(regex_->matcher(u, err));
    if (U_FAILURE(err)) return internal_error("regex matcher: ", u_errorName(err));
    int32_t pos = 0;
    auto piece = [&](int32_t a, int32_t b) -> Status {
      if (b <= a) return Status::ok();
      std::string s;
      u.tempSubStringBetween(a, b).toUTF8String(s);
      return encode_word(s, ids);
    };
    while (m->find(err) && U_SUCCESS(err)) {
      const int32_t a = m->start(err), b = m->end(err);
      QUILL_RETURN_IF_ERROR(piece(pos, a));  // a stretch the regex did not match stays a piece
      QUILL_RETURN_IF_ERROR(piece(a, b));
      pos = b;
    }
    if (U_FAILURE(err)) return internal_error("regex search: ", u_errorName(err));
    return piece(pos, u.length());
  }

  // One pre-token: its bytes as byte-level symbols, merged by rank.
  Status encode_word(const std::string& word, std::vector<int32_t>& ids) const {
    if (ignore_merges_) {
      std::string mapped;
      for (unsigned char c : word) mapped += bytes_[c];
      if (auto it = vocab_.find(mapped); it != vocab_.end()) {
        ids.push_back(it->second);
        return Status::ok();
      }
    }
    std::vector<int32_t> sym;
    sym.reserve(word.size());
    for (unsigned char c : word) {
      if (byte_id_[c] < 0) return invalid_file("the vocab has no token for byte ", int(c));
      sym.push_back(byte_id_[c]);
    }
    for (;;) {
      int32_t best_rank = std::numeric_limits<int32_t>::max(), best_id = -1;
      size_t best = 0;
      for (size_t k = 0; k + 1 < sym.size(); ++k) {
        auto it = merges_.find(pair_key(sym[k], sym[k + 1]));
        if (it != merges_.end() && it->second.first < best_rank) {
          best_rank = it->second.first;
          best_id = it->second.second;
          best = k;
        }
      }
      if (best_id < 0) break;
      sym[best] = best_id;
      sym.erase(sym.begin() + std::ptrdiff_t(best) + 1);
    }
    ids.insert(ids.end(), sym.begin(), sym.end());
    return Status::ok();
  }

  std::unordered_map<std::string, int32_t> vocab_;
  std::unordered_map<uint64_t, std::pair<int32_t, int32_t>> merges_;  // (a, b) -> (rank, merged id)
  std::vector<AddedToken> added_;
  std::vector<std::string> bytes_;
  std::array<int32_t, 256> byte_id_{};
  const icu::Normalizer2* nfc_ = nullptr;
  std::unique_ptr<icu::RegexPattern> regex_;
  bool ignore_merges_ = false;
  int64_t max_id_ = -1;
};

}  // namespace

Result<std::unique_ptr<BpeTokenizer>> BpeTokenizer::from_parts(const BpeParts& parts, const std::string& source) {
  auto t = std::make_unique<BpeTokenizerImpl>();
  QUILL_RETURN_IF_ERROR(t->init(parts, source));
  return std::unique_ptr<BpeTokenizer>(std::move(t));
}

Result<std::unique_ptr<BpeTokenizer>> BpeTokenizer::from_json(std::string_view json, const std::string& source) {
  auto j = parse_json_checked(json, "tokenizer.json", 256);
  if (!j) return j.take_status().with_file(source);
  if (!j->is_object()) return invalid_file("tokenizer.json is not a JSON object").with_file(source);
  QUILL_ASSIGN_OR_RETURN(BpeParts parts, parse_tokenizer_json(*j, source));
  return from_parts(parts, source);
}

Result<std::unique_ptr<BpeTokenizer>> BpeTokenizer::from_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) return not_found("cannot open the tokenizer").with_file(path);
  std::string text((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  return from_json(text, path);
}

}  // namespace quill
