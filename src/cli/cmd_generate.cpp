// `quill generate`: SD3-class text-to-image from precomputed conditioning tensors (text encoders
// come later): transformer + VAE, flow-matching Euler with batched CFG, PNG out.
#include <chrono>
#include <cstdio>
#include <optional>

#include "cli/command.h"
#include "cli/progress.h"
#include "core/memory_stats.h"
#include "io/image.h"
#include "io/safetensors.h"
#include "pipeline/image_postprocess.h"
#include "pipeline/sd3_pipeline.h"

namespace quill::cli {
namespace {

struct Options {
  std::string model, vae, cond, negative, latents, output;
  int steps = 28, threads = 0;
  float cfg = 7.0f;
  double shift = 3.0;
  uint64_t seed = 0;
  int64_t width = 0, height = 0;
  bool tiled = false;
};

Result<SD3Conditioning> read_conditioning(const std::string& path, const SD3Config& cfg, int64_t* batch,
                                          int64_t* text_len) {
  QUILL_ASSIGN_OR_RETURN(auto f, SafetensorsFile::open(path));
  for (const char* name : {"encoder_hidden_states", "pooled_projections"})
    if (!f->find(name))
      return invalid_argument("missing tensor '", name, "'; a conditioning file holds encoder_hidden_states [B, T, ",
                              cfg.joint_attention_dim, "] and pooled_projections [B, ", cfg.pooled_projection_dim, "]")
          .with_file(path);
  QUILL_ASSIGN_OR_RETURN(Tensor e, f->tensor("encoder_hidden_states"));
  QUILL_ASSIGN_OR_RETURN(Tensor p, f->tensor("pooled_projections"));
  if (e.rank() != 3 || e.dim(2) != cfg.joint_attention_dim || !dtype_traits(e.dtype()).is_float)
    return invalid_argument("wrong shape or dtype")
        .with_tensor("encoder_hidden_states")
        .with_file(path)
        .with_expected_found(str_cat("float [B, T, ", cfg.joint_attention_dim, "]"), e.describe());
  if (p.rank() != 2 || p.dim(0) != e.dim(0) || p.dim(1) != cfg.pooled_projection_dim ||
      !dtype_traits(p.dtype()).is_float)
    return invalid_argument("wrong shape or dtype")
        .with_tensor("pooled_projections")
        .with_file(path)
        .with_expected_found(str_cat("float [", e.dim(0), ", ", cfg.pooled_projection_dim, "]"), p.describe());
  if (*batch >= 0 && (e.dim(0) != *batch || e.dim(1) != *text_len))
    return invalid_argument("negative conditioning must match the positive one's batch and length")
        .with_file(path)
        .with_expected_found(str_cat("[", *batch, ", ", *text_len, ", *]"), e.shape().to_string());
  *batch = e.dim(0);
  *text_len = e.dim(1);
  return SD3Conditioning{e.to_f32_vector(), p.to_f32_vector()};
}

int run(const Options& o) {
  if (o.cfg > 1.0f && o.negative.empty())
    return report_error(invalid_argument(
        "--cfg ", o.cfg, " > 1 needs --negative (the unconditional tensors); use --cfg 1 to skip guidance"));
  ThreadPool::set_global_threads(o.threads > 0 ? o.threads : default_thread_count());
  const auto t0 = std::chrono::steady_clock::now();
  auto engine = open_sd3_engine(o.model, ThreadPool::global());
  if (!engine) return report_error(engine.status());
  auto vae_files = ModelFiles::open(o.vae);
  if (!vae_files) return report_error(vae_files.status());
  auto vae = AutoencoderKL::load(**vae_files);
  if (!vae) return report_error(vae.status());
  const SD3Config& cfg = (*engine)->model().config();
  int64_t batch = -1, text_len = -1;
  auto cond = read_conditioning(o.cond, cfg, &batch, &text_len);
  if (!cond) return report_error(cond.status());
  std::optional<SD3Conditioning> negative;
  if (o.cfg > 1.0f) {
    auto n = read_conditioning(o.negative, cfg, &batch, &text_len);
    if (!n) return report_error(n.status());
    negative = std::move(n.value());
  }
  std::vector<float> latents;
  const int64_t f = (*vae)->config().downscale();
  if (!o.latents.empty()) {
    auto lf = SafetensorsFile::open(o.latents);
    if (!lf) return report_error(lf.status());
    auto lt = (*lf)->tensor("latents");
    if (!lt) return report_error(lt.status());
    const Shape want{batch, cfg.in_channels, o.height / f, o.width / f};
    if (lt->shape() != want)
      return report_error(invalid_argument("wrong shape")
                              .with_tensor("latents")
                              .with_file(o.latents)
                              .with_expected_found(want.to_string(), lt->shape().to_string()));
    latents = lt->to_f32_vector();
  }
  const double load_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();

  SD3GenerateRequest r;
  r.batch = batch;
  r.height = o.height;
  r.width = o.width;
  r.text_len = text_len;
  r.cond = &cond.value();
  r.negative = negative ? &*negative : nullptr;
  r.steps = o.steps;
  r.guidance_scale = o.cfg;
  r.shift = o.shift;
  r.seed = o.seed;
  r.initial_latents = latents.empty() ? nullptr : &latents;
  r.tiling.enabled = o.tiled;
  SD3GenerateTimings timings;
  Progress progress("denoise", o.steps);
  auto image = sd3_generate(**engine, **vae, r, &timings, [&](int done, int) { progress.update(done); });
  progress.finish();
  if (!image) return report_error(image.status());

  const auto t_save = std::chrono::steady_clock::now();
  const int64_t H = image->dim(2), W = image->dim(3);
  for (int64_t n = 0; n < batch; ++n) {
    Image img;
    img.width = int(W);
    img.height = int(H);
    img.channels = 3;
    img.pixels = image_to_u8(image->data_as<float>() + n * 3 * H * W, 3, H, W);
    std::string path = o.output;
    if (batch > 1) {
      const auto dot = path.rfind('.');
      path = (dot == std::string::npos ? path : path.substr(0, dot)) + "_" + std::to_string(n) +
             (dot == std::string::npos ? ".png" : path.substr(dot));
    }
    Status st = write_png(path, img);
    if (!st) return report_error(st);
    std::printf("wrote %s (%lldx%lld)\n", path.c_str(), (long long)W, (long long)H);
  }
  const double save_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t_save).count();
  const auto stats = (*engine)->plan_stats();
  std::printf(
      "timing: load %.0f ms, denoise %.0f ms (%d steps, %.2f steps/s, CFG %s, plan builds %llu), decode %.0f ms%s, "
      "save %.0f ms; peak RSS %.1f MiB\n",
      load_ms, timings.denoise_ms, timings.steps, timings.steps / (timings.denoise_ms / 1e3),
      o.cfg > 1.0f ? "batched 2x" : "off", (unsigned long long)stats.builds, timings.decode_ms,
      o.tiled ? " (tiled)" : "", save_ms, double(peak_rss_bytes()) / (1024.0 * 1024.0));
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
      ->check(CLI::Range(0.0, 100.0));
  sub.add_option("--shift", o->shift, "flow-matching static shift (SD3: 3.0)")->check(CLI::Range(0.01, 100.0));
  sub.add_option("--seed", o->seed, "seed for the initial noise (Philox; same seed = same image everywhere)");
  sub.add_option("--width", o->width, "image width in pixels (multiple of VAE factor x patch size)")
      ->required()
      ->check(CLI::Range(8, 16384));
  sub.add_option("--height", o->height, "image height in pixels")->required()->check(CLI::Range(8, 16384));
  sub.add_flag("--tiled", o->tiled, "decode in overlapping tiles (bounded memory for large images)");
  sub.add_option("--threads", o->threads, "CPU threads")->check(CLI::Range(1, 1024));
  sub.add_option("-o,--output", o->output, "output PNG (batch > 1 adds _N before the extension)")->required();
  return [o] { return run(*o); };
}

}  // namespace
QUILL_COMMAND(generate, "generate", "Make images with an SD3-class transformer + VAE from conditioning tensors", setup);
}  // namespace quill::cli
