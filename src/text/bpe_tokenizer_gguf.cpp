// GGUF tokenizer metadata (llama.cpp's `tokenizer.ggml.*` keys) -> BpeParts.
#include <string>

#include <nlohmann/json.hpp>

#include "io/json_util.h"
#include "text/bpe_tokenizer.h"

namespace quill {

namespace {

// Qwen2's pre-tokenizer split (its tokenizer.json), which llama.cpp names "qwen2".
constexpr const char* kQwen2Pattern =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";

// llama_token_type in llama.cpp's vocabulary.
constexpr int kControl = 3, kUserDefined = 4;

}  // namespace

bool gguf_metadata_has_tokenizer(const nlohmann::json& meta) {
  return meta.is_object() && meta.contains("tokenizer.ggml.tokens");
}

Result<BpeParts> bpe_parts_from_gguf_metadata(const nlohmann::json& meta, const std::string& source) {
  auto key = [&](const char* k) -> const nlohmann::json* {
    auto it = meta.find(k);
    return it == meta.end() ? nullptr : &*it;
  };
  const auto* model = key("tokenizer.ggml.model");
  if (!model) return invalid_file("the GGUF has no tokenizer (tokenizer.ggml.model is missing)").with_file(source);
  if (*model != "gpt2")
    return unsupported("GGUF tokenizer.ggml.model ", dump_json(*model), " (only \"gpt2\", byte-level BPE)")
        .with_file(source);
  const auto* pre = key("tokenizer.ggml.pre");
  if (!pre || !pre->is_string() || !(*pre == "qwen2" || *pre == "deepseek-r1-qwen"))
    return unsupported("GGUF tokenizer.ggml.pre ", pre ? dump_json(*pre) : "(missing)",
                       " (the Qwen2 family: \"qwen2\", \"deepseek-r1-qwen\")")
        .with_file(source);
  const auto* tokens = key("tokenizer.ggml.tokens");
  const auto* types = key("tokenizer.ggml.token_type");
  const auto* merges = key("tokenizer.ggml.merges");
  if (!tokens || !tokens->is_array()) return invalid_file("GGUF tokenizer.ggml.tokens is not a list").with_file(source);
  if (!types || !types->is_array() || types->size() != tokens->size())
    return invalid_file("GGUF tokenizer.ggml.token_type must list one type per token (",
                        tokens->size(), " tokens, ", types && types->is_array() ? types->size() : 0, " types)")
        .with_file(source);
  if (!merges || !merges->is_array()) return invalid_file("GGUF tokenizer.ggml.merges is not a list").with_file(source);
  if (tokens->size() > size_t(1) << 24)
    return invalid_file("GGUF tokenizer has ", tokens->size(), " tokens (at most 16M)").with_file(source);

  BpeParts parts;
  parts.nfc = true;
  parts.pattern = kQwen2Pattern;
  parts.vocab.reserve(tokens->size());
  for (size_t i = 0; i < tokens->size(); ++i) {
    const auto& t = (*tokens)[i];
    const auto& type = (*types)[i];
    if (!t.is_string() || t.get_ref<const std::string&>().empty())
      return invalid_file("GGUF tokenizer.ggml.tokens[", i, "] is not a non-empty string").with_file(source);
    if (!type.is_number_integer())
      return invalid_file("GGUF tokenizer.ggml.token_type[", i, "] is not an integer").with_file(source);
    const std::string& text = t.get_ref<const std::string&>();
    const int32_t id = int32_t(i);
    parts.vocab.emplace_back(text, id);
    const int64_t ty = type.get<int64_t>();
    // The converter fills ids the tokenizer does not use with "[PAD<id>]" (USER_DEFINED); the
    // tokenizer it came from would never match them in text.
    const bool filler = ty == kUserDefined && text == "[PAD" + std::to_string(i) + "]";
    if ((ty == kControl || ty == kUserDefined) && !filler) parts.added.emplace_back(text, id);
  }
  parts.merges.reserve(merges->size());
  for (size_t i = 0; i < merges->size(); ++i) {
    const auto& m = (*merges)[i];
    const std::string s = m.is_string() ? m.get<std::string>() : std::string();
    const size_t sp = s.find(' ');
    if (sp == std::string::npos || sp == 0 || sp + 1 == s.size())
      return invalid_file("GGUF tokenizer.ggml.merges[", i, "] = ", dump_json(m), " is not \"a b\"").with_file(source);
    parts.merges.emplace_back(s.substr(0, sp), s.substr(sp + 1));
  }
  return parts;
}

}  // namespace quill
