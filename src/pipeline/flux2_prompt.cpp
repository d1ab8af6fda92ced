#include "pipeline/flux2_prompt.h"

#include <filesystem>
#include <fstream>

#include "io/json_util.h"

namespace quill {

namespace fs = std::filesystem;

std::string klein_chat_prompt(const std::string& prompt) {
  // Qwen3's chat template, one user message, add_generation_prompt=True, enable_thinking=False.
  return "<|im_start|>user\n" + prompt + "<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n";
}

Result<std::unique_ptr<Flux2PromptEncoder>> Flux2PromptEncoder::open(const std::string& text_encoder,
                                                                     const std::string& tokenizer, ThreadPool& pool) {
  auto p = std::unique_ptr<Flux2PromptEncoder>(new Flux2PromptEncoder());
  QUILL_ASSIGN_OR_RETURN(auto files, ModelFiles::open(text_encoder));
  std::string pad = "<|endoftext|>";  // Qwen's, unless the tokenizer's files name another
  std::optional<int32_t> pad_id;
  std::string tokenizer_source;
  if (tokenizer.empty()) {
    // A llama.cpp GGUF text encoder carries its tokenizer in tokenizer.ggml.* metadata.
    if (files->format() != "gguf" || !gguf_metadata_has_tokenizer(files->config()))
      return invalid_argument("no tokenizer given, and the text encoder has none in it (only a llama.cpp GGUF "
                              "carries one)")
          .with_file(text_encoder);
    tokenizer_source = files->path();
    QUILL_ASSIGN_OR_RETURN(BpeParts parts, bpe_parts_from_gguf_metadata(files->config(), tokenizer_source));
    QUILL_ASSIGN_OR_RETURN(p->tokenizer_, BpeTokenizer::from_parts(parts, tokenizer_source));
    if (auto it = files->config().find("tokenizer.ggml.padding_token_id"); it != files->config().end()) {
      if (!it->is_number_integer() || it->get<int64_t>() < 0 || it->get<int64_t>() >= p->tokenizer_->vocab_size())
        return invalid_file("tokenizer.ggml.padding_token_id ", dump_json(*it), " is not a token id")
            .with_file(tokenizer_source);
      pad_id = int32_t(it->get<int64_t>());
    }
  } else {
    std::error_code ec;
    const bool folder = fs::is_directory(tokenizer, ec);
    tokenizer_source = folder ? (fs::path(tokenizer) / "tokenizer.json").string() : tokenizer;
    QUILL_ASSIGN_OR_RETURN(p->tokenizer_, BpeTokenizer::from_file(tokenizer_source));
    // The pad token: tokenizer_config.json's pad_token (a string or {"content": ...}).
    const fs::path cfg = (folder ? fs::path(tokenizer) : fs::path(tokenizer).parent_path()) / "tokenizer_config.json";
    if (fs::is_regular_file(cfg, ec)) {
      std::ifstream f(cfg, std::ios::binary);
      std::string text((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
      QUILL_ASSIGN_OR_RETURN(nlohmann::json j, parse_json_checked(text, "tokenizer_config.json"));
      if (auto it = j.find("pad_token"); it != j.end()) {
        if (it->is_string()) pad = it->get<std::string>();
        else if (it->is_object() && it->contains("content") && (*it)["content"].is_string())
          pad = (*it)["content"].get<std::string>();
      }
      if (auto it = j.find("padding_side"); it != j.end() && !(it->is_string() && it->get<std::string>() == "right"))
        return unsupported("tokenizer padding_side ", dump_json(*it), " (the klein pipeline pads on the right)")
            .with_file(cfg.string());
    }
  }
  if (!pad_id) pad_id = p->tokenizer_->token_to_id(pad);
  if (!pad_id) return invalid_file("the pad token ", pad, " is not in the tokenizer").with_file(tokenizer_source);
  p->pad_id_ = *pad_id;
  const int64_t needed = kLayers[2];
  QUILL_ASSIGN_OR_RETURN(auto model, Qwen3Encoder::load(files, needed));
  if (model->config().vocab_size < p->tokenizer_->vocab_size())
    return invalid_file("the text encoder's vocabulary (", model->config().vocab_size,
                        ") is smaller than the tokenizer's (", p->tokenizer_->vocab_size(), ")")
        .with_file(text_encoder);
  p->engine_ = std::make_unique<Engine<Qwen3Encoder>>(std::move(model), pool);
  return p;
}

int64_t Flux2PromptEncoder::embed_dim() const { return 3 * engine_->model().config().hidden_size; }

Result<Flux2Conditioning> Flux2PromptEncoder::encode(const std::vector<std::string>& prompts,
                                                     int64_t max_sequence_length) {
  if (prompts.empty()) return invalid_argument("no prompts to encode");
  if (max_sequence_length < 1 || max_sequence_length > 4096)
    return invalid_argument("max_sequence_length ", max_sequence_length, " out of range [1, 4096]");
  const int64_t B = int64_t(prompts.size()), L = max_sequence_length;
  std::vector<int32_t> ids(static_cast<size_t>(B * L), pad_id_), valid(static_cast<size_t>(B), 0);
  for (int64_t b = 0; b < B; ++b) {
    auto t = tokenizer_->encode(klein_chat_prompt(prompts[size_t(b)]));
    if (!t) return t.take_status().with_context(str_cat("prompt ", b + 1));
    const int64_t n = std::min<int64_t>(int64_t(t->size()), L);  // truncation=True, on the right
    std::copy(t->begin(), t->begin() + n, ids.begin() + b * L);
    valid[size_t(b)] = int32_t(n);
  }
  Flux2Conditioning c;
  c.batch = B;
  c.text_len = L;
  c.prompt_embeds.resize(size_t(B * L * embed_dim()));
  const std::vector<int64_t> layers(std::begin(kLayers), std::end(kLayers));
  QUILL_RETURN_IF_ERROR(engine_->forward(Qwen3Bucket{B, L}, ids.data(), valid.data(), layers, c.prompt_embeds.data()));
  return c;
}

}  // namespace quill
