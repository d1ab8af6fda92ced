// Flux2KleinPipeline._get_qwen3_prompt_embeds in C++: the prompt through Qwen3's chat template with
// thinking off, tokenized (byte-level BPE from tokenizer.json), right-padded / truncated to
// max_sequence_length with the pad token, through the Qwen3 text encoder; hidden states 9, 18 and
// 27 stacked per token into prompt_embeds [B, L, 3 x hidden].
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "models/qwen3_encoder.h"
#include "pipeline/flux2_pipeline.h"
#include "runtime/engine.h"
#include "text/bpe_tokenizer.h"

namespace quill {

// The text Flux2KleinPipeline feeds the tokenizer for one prompt.
std::string klein_chat_prompt(const std::string& prompt);

class Flux2PromptEncoder {
 public:
  // `text_encoder`: a Qwen3 (ForCausalLM) folder or safetensors, a Quill GGUF of one, or a
  // llama.cpp GGUF; `tokenizer`: a folder with tokenizer.json (and tokenizer_config.json naming the
  // pad token) or the tokenizer.json itself; "" = the tokenizer in the llama.cpp GGUF's metadata.
  static Result<std::unique_ptr<Flux2PromptEncoder>> open(const std::string& text_encoder,
                                                          const std::string& tokenizer, ThreadPool& pool);

  // prompt_embeds for each prompt, batch = prompts.size().
  Result<Flux2Conditioning> encode(const std::vector<std::string>& prompts, int64_t max_sequence_length = 512);
  int64_t embed_dim() const;  // 3 x hidden
  Dispatcher& ops() { return engine_->ops(); }

  static constexpr int64_t kLayers[3] = {9, 18, 27};

 private:
  std::unique_ptr<BpeTokenizer> tokenizer_;
  std::unique_ptr<Engine<Qwen3Encoder>> engine_;
  int32_t pad_id_ = 0;
};

}  // namespace quill
