// `quill encode-prompt`: a prompt through FLUX.2 [klein]'s Qwen3 text encoder, the embeddings
// written as diffusers names them (prompt_embeds [1, L, 3 x hidden], negative_prompt_embeds), for
// debugging, for `quill generate --cond`, and to compare with diffusers' encode_prompt.
#include <chrono>
#include <cstdio>
#include <filesystem>

#include "cli/command.h"
#include "core/memory_stats.h"
#include "core/thread_pool.h"
#include "io/safetensors.h"
#include "pipeline/flux2_prompt.h"

namespace quill::cli {
namespace {

struct Options {
  std::string model, text_encoder, tokenizer, prompt, negative_prompt, output;
  bool has_negative = false;
  int64_t max_length = 512;
  int threads = 0;
};

int run(const Options& o) {
  namespace fs = std::filesystem;
  std::string te = o.text_encoder, tok = o.tokenizer;
  if (!o.model.empty()) {
    if (te.empty()) te = (fs::path(o.model) / "text_encoder").string();
    if (tok.empty()) tok = (fs::path(o.model) / "tokenizer").string();
  }
  if (te.empty())
    return report_error(invalid_argument("give --model (a klein pipeline folder) or --text-encoder (with --tokenizer "
                                         "unless it is a llama.cpp GGUF, which carries its tokenizer)"));
  ThreadPool pool(o.threads > 0 ? o.threads : default_thread_count());
  const auto t0 = std::chrono::steady_clock::now();
  auto enc = Flux2PromptEncoder::open(te, tok, pool);
  if (!enc) return report_error(enc.status());
  const auto t1 = std::chrono::steady_clock::now();
  auto cond = (*enc)->encode({o.prompt}, o.max_length);
  if (!cond) return report_error(cond.status());
  const int64_t D = (*enc)->embed_dim();
  std::vector<std::pair<std::string, Tensor>> out = {
      {"prompt_embeds", Tensor(cond->prompt_embeds.data(), DType::kF32, {1, cond->text_len, D})}};
  Flux2Conditioning negative;
  if (o.has_negative) {
    auto n = (*enc)->encode({o.negative_prompt}, o.max_length);
    if (!n) return report_error(n.status());
    negative = std::move(*n);
    out.emplace_back("negative_prompt_embeds", Tensor(negative.prompt_embeds.data(), DType::kF32, {1, negative.text_len, D}));
  }
  const auto t2 = std::chrono::steady_clock::now();
  if (Status st = write_safetensors(o.output, out, {}); !st) return report_error(st);
  const auto ms = [](auto a, auto b) { return std::chrono::duration<double, std::milli>(b - a).count(); };
  std::printf("wrote %s (prompt_embeds [1, %lld, %lld]%s)\n", o.output.c_str(), (long long)cond->text_len,
              (long long)D, o.has_negative ? " + negative_prompt_embeds" : "");
  std::printf("timing: load %.0f ms, encode %.0f ms; peak RSS %.1f MiB\n", ms(t0, t1), ms(t1, t2),
              double(peak_rss_bytes()) / (1024.0 * 1024.0));
  return kExitOk;
}

Runner setup(CLI::App& sub) {
  auto o = std::make_shared<Options>();
  sub.add_option("--model", o->model, "a FLUX.2 [klein] pipeline folder (its text_encoder/ and tokenizer/)");
  sub.add_option("--text-encoder", o->text_encoder, "Qwen3 text encoder: folder, .safetensors or .gguf");
  sub.add_option("--tokenizer", o->tokenizer,
                 "tokenizer folder or tokenizer.json (default: the one in a llama.cpp GGUF text encoder)");
  sub.add_option("--prompt", o->prompt, "the prompt")->required();
  sub.add_option("--negative-prompt", o->negative_prompt, "also write negative_prompt_embeds for this text")
      ->each([o](const std::string&) { o->has_negative = true; });
  sub.add_option("--max-length", o->max_length, "tokens per prompt after padding / truncation (klein: 512)")
      ->check(CLI::Range(1, 4096));
  sub.add_option("--threads", o->threads, "CPU threads")->check(CLI::Range(1, 1024));
  sub.add_option("-o,--output", o->output, "safetensors to write")->required();
  return [o] { return run(*o); };
}

}  // namespace
QUILL_COMMAND(encode_prompt, "encode-prompt", "Encode a prompt with FLUX.2 [klein]'s Qwen3 text encoder (prompt_embeds)",
              setup);
}  // namespace quill::cli
