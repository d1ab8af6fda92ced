// `quill generate`: text-to-image from precomputed conditioning tensors (text encoders come
// later) through the public ImageGenerator: transformer + VAE, flow-matching Euler with batched
// CFG, PNG out.
#include <chrono>
#include <cstdio>
#include <optional>

#include "cli/batch_lines.h"
#include "cli/command.h"
#include "cli/progress.h"
#include "cli/validators.h"
#include "core/memory_stats.h"
#include "io/image.h"
#include "io/safetensors.h"
#include "quill/quill.h"

namespace quill::cli {
namespace {

struct Options {
  std::string model, vae, cond, negative, latents, output, device = "auto";
  int steps = 28, threads = 0;
  float cfg = 7.0f;
  double shift = 3.0;
  uint64_t seed = 0;
  int64_t width = 0, height = 0;
  bool tiled = false, diag = false;
};

using Conditioning = ImageGenerator::Conditioning;

Result<Conditioning> read_conditioning(const std::string& path, const ImageGenerator::Info& info, int64_t* batch,
                                       int64_t* text_len) {
  QUILL_ASSIGN_OR_RETURN(auto f, SafetensorsFile::open(path));
  for (const char* name : {"encoder_hidden_states", "pooled_projections"})
    if (!f->find(name))
      return invalid_argument("missing tensor '", name, "'; a conditioning file holds encoder_hidden_states [B, T, ",
                              info.joint_attention_dim, "] and pooled_projections [B, ", info.pooled_projection_dim,
                              "]")
          .with_file(path);
  QUILL_ASSIGN_OR_RETURN(Tensor e, f->tensor("encoder_hidden_states"));
  QUILL_ASSIGN_OR_RETURN(Tensor p, f->tensor("pooled_projections"));
  if (e.rank() != 3 || e.dim(2) != info.joint_attention_dim || !dtype_traits(e.dtype()).is_float)
    return invalid_argument("wrong shape or dtype")
        .with_tensor("encoder_hidden_states")
        .with_file(path)
        .with_expected_found(str_cat("float [B, T, ", info.joint_attention_dim, "]"), e.describe());
  if (p.rank() != 2 || p.dim(0) != e.dim(0) || p.dim(1) != info.pooled_projection_dim ||
      !dtype_traits(p.dtype()).is_float)
    return invalid_argument("wrong shape or dtype")
        .with_tensor("pooled_projections")
        .with_file(path)
        .with_expected_found(str_cat("float [", e.dim(0), ", ", info.pooled_projection_dim, "]"), p.describe());
  if (*batch >= 0 && (e.dim(0) != *batch || e.dim(1) != *text_len))
    return invalid_argument("negative conditioning must match the positive one's batch and length")
        .with_file(path)
        .with_expected_found(str_cat("[", *batch, ", ", *text_len, ", *]"), e.shape().to_string());
  *batch = e.dim(0);
  *text_len = e.dim(1);
  return Conditioning{e.to_f32_vector(), p.to_f32_vector(), e.dim(0), e.dim(1)};
}

Result<std::vector<float>> read_latents(const std::string& path, const Shape& want) {
  QUILL_ASSIGN_OR_RETURN(auto lf, SafetensorsFile::open(path));
  QUILL_ASSIGN_OR_RETURN(Tensor lt, lf->tensor("latents"));
  if (lt.shape() != want)
    return invalid_argument("wrong shape")
        .with_tensor("latents")
        .with_file(path)
        .with_expected_found(want.to_string(), lt.shape().to_string());
  return lt.to_f32_vector();
}

int run(const Options& o) {
  if (o.cfg > 1.0f && o.negative.empty())
    return report_error(invalid_argument(
        "--cfg ", o.cfg, " > 1 needs --negative (the unconditional tensors); use --cfg 1 to skip guidance"));
  auto device = parse_device_choice(o.device);
  if (!device) return report_error(device.status());
  const auto t0 = std::chrono::steady_clock::now();
  auto gen_r = ImageGenerator::open({o.model, o.vae, o.threads, *device});
  if (!gen_r) return report_error(gen_r.status());
  ImageGenerator& gen = **gen_r;
  const ImageGenerator::Info& info = gen.info();
  int64_t batch = -1, text_len = -1;
  auto cond = read_conditioning(o.cond, info, &batch, &text_len);
  if (!cond) return report_error(cond.status());
  std::optional<Conditioning> negative;
  if (o.cfg > 1.0f) {
    auto n = read_conditioning(o.negative, info, &batch, &text_len);
    if (!n) return report_error(n.status());
    negative = std::move(n.value());
  }
  ImageGenerator::Options go;
  if (!o.latents.empty()) {
    auto lat = read_latents(o.latents, {batch, info.in_channels, o.height / info.vae_scale, o.width / info.vae_scale});
    if (!lat) return report_error(lat.status());
    go.initial_latents = std::move(lat.value());
  }
  const double load_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();

  go.width = o.width;
  go.height = o.height;
  go.steps = o.steps;
  go.guidance_scale = o.cfg;
  go.shift = o.shift;
  go.seed = o.seed;
  go.tiled_decode = o.tiled;
  Progress progress("denoise", o.steps);
  go.on_step = [&](int done, int) { progress.update(done); };
  auto out = gen.generate(cond.value(), negative ? &*negative : nullptr, go);
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
      load_ms, out->denoise_ms, o.steps, o.steps / (out->denoise_ms / 1e3), o.cfg > 1.0f ? "batched 2x" : "off",
      (unsigned long long)out->plan_builds, out->decode_ms, o.tiled ? " (tiled)" : "", save_ms,
      double(peak_rss_bytes()) / (1024.0 * 1024.0), info.device.c_str());
  if (o.diag) std::printf("%s", gen.op_counts().c_str());
  return kExitOk;
}

Runner setup(CLI::App& sub) {
  auto o = std::make_shared<Options>();
  sub.add_option("--model", o->model, "SD3 transformer (diffusers folder, .safetensors or .gguf)")->required();
  sub.add_option("--vae", o->vae, "AutoencoderKL (diffusers folder or .safetensors)")->required();
  sub.add_option("--cond", o->cond, "safetensors with encoder_hidden_states [B,T,J] and pooled_projections [B,P]")
      ->required();
  sub.add_option("--negative", o->negative, "the same for the negative prompt (needed when --cfg > 1)");
  sub.add_option("--latents", o->latents, "initial latents [B,C,H/f,W/f] from a file (else seeded noise)");
  sub.add_option("--steps", o->steps, "denoising steps")->check(CLI::Range(1, 1000));
  sub.add_option("--cfg", o->cfg, "classifier-free guidance scale (<= 1 turns guidance off)")
      ->check(FiniteRange(0.0, 100.0));
  sub.add_option("--shift", o->shift, "flow-matching static shift (SD3: 3.0)")->check(FiniteRange(0.01, 100.0));
  sub.add_option("--seed", o->seed, "seed for the initial noise (Philox; same seed = same image everywhere)")
      ->check(Seed64());
  sub.add_option("--width", o->width, "image width in pixels (multiple of VAE factor x patch size)")
      ->required()
      ->check(CLI::Range(8, 16384));
  sub.add_option("--height", o->height, "image height in pixels")->required()->check(CLI::Range(8, 16384));
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
QUILL_COMMAND(generate, "generate", "Make images with an SD3-class transformer + VAE from conditioning tensors", setup);
}  // namespace quill::cli
