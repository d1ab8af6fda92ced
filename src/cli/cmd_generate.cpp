// `quill generate`: text-to-image from precomputed conditioning tensors (text encoders come
// later) through the public ImageGenerator: transformer + VAE, flow-matching Euler with batched
// CFG, PNG out. The pipeline follows the transformer's detected architecture (SD3, FLUX.2).
#include <chrono>
#include <cstdio>
#include <optional>

#include "cli/batch_lines.h"
#include "cli/command.h"
#include "cli/progress.h"
#include "cli/validators.h"
#include "core/memory_stats.h"
#include "io/image.h"
#include "quill/quill.h"

namespace quill::cli {
namespace {

struct Options {
  std::string model, vae, cond, negative, latents, output, device = "auto";
  std::string prompt, negative_prompt, text_encoder, tokenizer;
  bool has_prompt = false, has_negative_prompt = false;
  int steps = 0, threads = 0;  // steps / cfg unset: the model's defaults
  float cfg = -1.0f;
  double shift = 0.0;  // unset: SD3's 3.0
  uint64_t seed = 0;
  int64_t width = 0, height = 0;
  bool tiled = false, diag = false;
};

using Conditioning = ImageGenerator::Conditioning;

// The conditioning in `path` (read_conditioning_file); the negative must match the positive's
// batch, and for SD3 its length.
Result<Conditioning> read_conditioning(const std::string& path, const ImageGenerator::Info& info, bool negative,
                                       int64_t* batch, int64_t* text_len) {
  QUILL_ASSIGN_OR_RETURN(Conditioning c, read_conditioning_file(path, info, negative));
  const bool pooled = info.pooled_projection_dim > 0;
  if (*batch >= 0 && (c.batch != *batch || (pooled && c.text_len != *text_len)))
    return invalid_argument("negative conditioning must match the positive one's batch",
                            pooled ? " and length" : "")
        .with_file(path)
        .with_expected_found(str_cat("[", *batch, ", ", pooled ? str_cat(*text_len) : "*", ", *]"),
                             str_cat("[", c.batch, ", ", c.text_len, ", ", info.joint_attention_dim, "]"));
  if (*batch < 0) {
    *batch = c.batch;
    *text_len = c.text_len;
  }
  return c;
}

// --prompt: the model's text encoder makes the conditioning (and the negative, "" unless given).
Status conditioning_from_prompts(ImageGenerator& gen, const Options& o, bool guided, Conditioning* cond,
                                 std::optional<Conditioning>* negative) {
  QUILL_ASSIGN_OR_RETURN(*cond, gen.encode_prompts({o.prompt}));
  if (guided) {
    QUILL_ASSIGN_OR_RETURN(Conditioning n, gen.encode_prompts({o.negative_prompt}));
    *negative = std::move(n);
  }
  return Status::ok();
}

int run(const Options& o) {
  auto device = parse_device_choice(o.device);
  if (!device) return report_error(device.status());
  if (o.has_prompt == !o.cond.empty())
    return report_error(invalid_argument("give exactly one of --prompt (text) and --cond (precomputed tensors)"));
  if (o.has_prompt && !o.negative.empty())
    return report_error(invalid_argument("--negative is a tensor file for --cond; with --prompt use --negative-prompt"));
  if (!o.has_prompt && (o.has_negative_prompt || !o.text_encoder.empty() || !o.tokenizer.empty()))
    return report_error(invalid_argument("--negative-prompt, --text-encoder and --tokenizer go with --prompt"));
  const auto t0 = std::chrono::steady_clock::now();
  ImageGenerator::OpenOptions oo;
  oo.transformer = o.model;
  oo.vae = o.vae;
  oo.threads = o.threads;
  oo.device = *device;
  if (o.has_prompt) {
    oo.text_encoder = o.text_encoder;
    oo.tokenizer = o.tokenizer;
  }
  auto gen_r = ImageGenerator::open(oo);
  if (!gen_r) return report_error(gen_r.status());
  ImageGenerator& gen = **gen_r;
  const ImageGenerator::Info& info = gen.info();
  const int steps = o.steps > 0 ? o.steps : info.default_steps;
  const int64_t width = o.width > 0 ? o.width : info.default_size, height = o.height > 0 ? o.height : info.default_size;
  const float cfg = o.cfg >= 0.0f ? o.cfg : info.default_guidance;
  const bool guided = cfg > 1.0f && !info.guidance_distilled;
  if (cfg > 1.0f && info.guidance_distilled)
    std::fprintf(stderr, "quill: warning: --cfg %g is ignored: this model is guidance-distilled (%s)\n", cfg,
                 info.defaults_source.c_str());
  if (o.shift > 0.0 && info.pooled_projection_dim == 0)
    return report_error(invalid_argument("--shift is SD3's static shift; ", info.architecture,
                                         " shifts its schedule by the image size (empirical mu)"));
  if (o.has_prompt && !info.takes_prompts)
    return report_error(unsupported(info.architecture, " here has no text encoder: give --text-encoder and "
                                    "--tokenizer, a pipeline folder with text_encoder/ and tokenizer/, or --cond"));
  int64_t batch = -1, text_len = -1;
  Conditioning cond;
  std::optional<Conditioning> negative;
  if (o.has_prompt) {
    if (Status st = conditioning_from_prompts(gen, o, guided, &cond, &negative); !st) return report_error(st);
    batch = cond.batch;
  } else {
    const bool negative_inside = o.negative.empty() && conditioning_file_has_negative(o.cond);
    if (guided && o.negative.empty() && !negative_inside)
      return report_error(invalid_argument("guidance scale ", cfg,
                                           " > 1 needs --negative (the unconditional tensors); use --cfg 1 to skip "
                                           "guidance"));
    auto c = read_conditioning(o.cond, info, false, &batch, &text_len);
    if (!c) return report_error(c.status());
    cond = std::move(*c);
    if (guided) {
      auto n = negative_inside ? read_conditioning(o.cond, info, true, &batch, &text_len)
                               : read_conditioning(o.negative, info, false, &batch, &text_len);
      if (!n) return report_error(n.status());
      negative = std::move(n.value());
    }
  }
  ImageGenerator::Options go;
  if (!o.latents.empty()) {
    if (height % info.latent_scale || width % info.latent_scale)
      return report_error(invalid_argument("--width and --height must be multiples of ", info.latent_scale, " for ",
                                           info.architecture));
    auto lat =
        read_latents_file(o.latents, {batch, info.in_channels, height / info.latent_scale, width / info.latent_scale});
    if (!lat) return report_error(lat.status());
    go.initial_latents = std::move(lat.value());
  }
  const double load_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();

  go.width = width;
  go.height = height;
  go.steps = steps;
  go.guidance_scale = cfg;
  go.shift = o.shift > 0.0 ? o.shift : 3.0;
  go.seed = o.seed;
  go.tiled_decode = o.tiled;
  Progress progress("denoise", steps);
  go.on_step = [&](int done, int) { progress.update(done); };
  auto out = gen.generate(cond, negative ? &*negative : nullptr, go);
  progress.finish();
  if (!out) return report_error(out.status());

  const auto t_save = std::chrono::steady_clock::now();
  for (int64_t n = 0; n < int64_t(out->rgb.size()); ++n) {
    Image img{int(out->width), int(out->height), 3, std::move(out->rgb[size_t(n)])};
    const std::string path = out->rgb.size() > 1 ? numbered_output(o.output, n + 1) : o.output;
    Status st = write_png(path, img);
    if (!st) return report_error(st);
    std::printf("wrote %s (%lldx%lld)\n", path.c_str(), (long long)out->width, (long long)out->height);
  }
  const double save_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t_save).count();
  std::printf(
      "timing: load %.0f ms, denoise %.0f ms (%d steps, %.2f steps/s, CFG %s, plan builds %llu), decode %.0f ms%s, "
      "save %.0f ms; peak RSS %.1f MiB; device %s\n",
      load_ms, out->denoise_ms, steps, steps / (out->denoise_ms / 1e3), guided ? "on" : "off",
      (unsigned long long)out->plan_builds, out->decode_ms, o.tiled ? " (tiled)" : "", save_ms,
      double(peak_rss_bytes()) / (1024.0 * 1024.0), info.device.c_str());
  if (o.diag) std::printf("%s", gen.op_counts().c_str());
  return kExitOk;
}

Runner setup(CLI::App& sub) {
  auto o = std::make_shared<Options>();
  sub.add_option("--model", o->model,
                 "a diffusers pipeline folder (its transformer/, vae/, text_encoder/, tokenizer/), or the transformer "
                 "alone: SD3 or FLUX.2 folder, .safetensors or .gguf; the architecture picks the pipeline")
      ->required();
  sub.add_option("--vae", o->vae,
                 "AutoencoderKL / AutoencoderKLFlux2 (diffusers folder or .safetensors; default: the pipeline "
                 "folder's)");
  sub.add_option("--prompt", o->prompt, "the text to draw (FLUX.2 [klein]: encoded by its Qwen3 text encoder)")
      ->each([o](const std::string&) { o->has_prompt = true; });
  sub.add_option("--negative-prompt", o->negative_prompt, "with --prompt and guidance on: the negative (default \"\")")
      ->each([o](const std::string&) { o->has_negative_prompt = true; });
  sub.add_option("--text-encoder", o->text_encoder, "Qwen3 text encoder: folder, .safetensors or .gguf (default: the pipeline folder's)");
  sub.add_option("--tokenizer", o->tokenizer, "tokenizer folder or tokenizer.json (default: the pipeline folder's, or the one in a llama.cpp GGUF text encoder)");
  sub.add_option("--cond", o->cond,
                 "instead of --prompt, safetensors with the text conditioning: SD3 encoder_hidden_states [B,T,J] + "
                 "pooled_projections [B,P]; FLUX.2 prompt_embeds [B,T,J] (+ negative_prompt_embeds for CFG)");
  sub.add_option("--negative", o->negative, "the same for the negative prompt (needed when guidance is on)");
  sub.add_option("--latents", o->latents,
                 "initial latents from a file (else seeded noise): SD3 [B,C,H/8,W/8], FLUX.2 [B,4C,H/16,W/16]");
  sub.add_option("--steps", o->steps,
                 "denoising steps (default: the model's: SD3 28; FLUX.2 klein 4 distilled, 50 base)")
      ->check(CLI::Range(1, 1000));
  sub.add_option("--cfg", o->cfg,
                 "classifier-free guidance scale, <= 1 turns it off (default: SD3 7; FLUX.2 klein 1 distilled, 4 "
                 "base)")
      ->check(FiniteRange(0.0, 100.0));
  sub.add_option("--shift", o->shift, "SD3's flow-matching static shift (FLUX.2 shifts by its empirical mu)")
      ->check(FiniteRange(0.01, 100.0));
  sub.add_option("--seed", o->seed, "seed for the initial noise (Philox; same seed = same image everywhere)")
      ->check(Seed64());
  sub.add_option("--width", o->width,
                 "image width in pixels, a multiple of VAE factor x patch size (default: the model's, 1024 for "
                 "SD3 and FLUX.2)")
      ->check(CLI::Range(8, 16384));
  sub.add_option("--height", o->height, "image height in pixels (default: the model's)")->check(CLI::Range(8, 16384));
  sub.add_flag("--tiled", o->tiled, "decode in overlapping tiles (bounded memory for large images)");
  sub.add_option("--threads", o->threads, "CPU threads")->check(CLI::Range(1, 1024));
  sub.add_option("--device", o->device, "auto (GPU when available), gpu (required) or cpu")
      ->check(CLI::IsMember({"auto", "gpu", "cpu"}));
  sub.add_flag("--diag", o->diag, "Print how many ops of each kind ran on which device");
  sub.add_option("-o,--output", o->output, "output PNG (batch > 1: image N is written to <stem>_NNNN<ext>, N from 1)")
      ->required();
  return [o] { return run(*o); };
}

}  // namespace
QUILL_COMMAND(generate, "generate",
              "Make images with an SD3 or FLUX.2 transformer + VAE from conditioning tensors", setup);
}  // namespace quill::cli
