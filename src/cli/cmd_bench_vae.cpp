// `quill bench-vae`: wall time and peak memory of one VAE decode on the CPU. Without --model it
// builds the SD3 VAE (AutoencoderKL 128/256/512/512, 16 latent channels) with random weights in
// memory, so it needs no download. Peak RSS is the process's (getrusage), so compare tiled and
// untiled decodes in separate runs.
#include <sys/resource.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <random>

#include "cli/command.h"
#include "io/model_files.h"
#include "models/autoencoder_kl.h"

namespace quill::cli {
namespace {

double peak_rss_mib() {
  struct rusage ru {};
  getrusage(RUSAGE_SELF, &ru);
  return double(ru.ru_maxrss) / 1024.0;  // KiB on Linux
}

AutoencoderKLConfig sd3_vae_config() {
  AutoencoderKLConfig c;
  c.block_out_channels = {128, 256, 512, 512};
  c.layers_per_block = 2;
  c.latent_channels = 16;
  c.norm_num_groups = 32;
  c.sample_size = 1024;
  c.scaling_factor = 1.5305;
  c.shift_factor = 0.0609;
  c.use_quant_conv = false;
  c.use_post_quant_conv = false;
  return c;
}

// Weights N(0, 1/fan_in), biases N(0, 0.01), norm scales 1: activations stay O(1) through the net.
VaeWeightSource random_weights(uint32_t seed) {
  auto rng = std::make_shared<std::mt19937>(seed);
  return [rng](const std::string& name, const Shape& shape) -> Result<Tensor> {
    Tensor t = Tensor::empty(DType::kF32, shape);
    float* p = t.data_as<float>();
    const bool is_norm =
        name.find("norm") != std::string::npos && name.size() > 7 && name.compare(name.size() - 7, 7, ".weight") == 0;
    const float stddev = shape.rank() >= 2 ? float(1.0 / std::sqrt(double(shape.numel() / shape[0]))) : 0.01f;
    std::normal_distribution<float> nd(0.0f, stddev);
    for (int64_t i = 0; i < t.numel(); ++i) p[i] = is_norm ? 1.0f : nd(*rng);
    return t;
  };
}

struct Options {
  std::string model;
  int64_t height = 1024, width = 1024;
  bool tiling = false;
  int64_t tile_size = 512;
  int threads = 0;
  int repeat = 1;
};

int run(const Options& o) {
  if (o.threads > 0) ThreadPool::set_global_threads(o.threads);
  ThreadPool& pool = ThreadPool::global();
  const auto t0 = std::chrono::steady_clock::now();
  std::unique_ptr<AutoencoderKL> vae;
  if (o.model.empty()) {
    auto v = AutoencoderKL::load(sd3_vae_config(), random_weights(1), false);
    if (!v) return report_error(v.status());
    vae = std::move(*v);
  } else {
    auto files = ModelFiles::open(o.model);
    if (!files) return report_error(files.status());
    auto v = AutoencoderKL::load(**files);
    if (!v) return report_error(v.status());
    vae = std::move(*v);
  }
  const auto& c = vae->config();
  const int64_t f = c.downscale();
  if (o.height % f || o.width % f || o.height <= 0 || o.width <= 0)
    return report_error(invalid_argument("image size must be a positive multiple of ", f));
  const double load_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const double rss_loaded = peak_rss_mib();

  Tensor z = Tensor::empty(DType::kF32, {1, c.latent_channels, o.height / f, o.width / f});
  std::mt19937 rng(2);
  std::normal_distribution<float> nd;
  for (int64_t i = 0; i < z.numel(); ++i) z.data_as<float>()[i] = nd(rng);

  VaeTiling tiling;
  tiling.enabled = o.tiling;
  tiling.tile_sample_size = o.tile_size;
  // The first decode also creates the convolution primitives for these shapes; later ones reuse them.
  Result<Tensor> img = internal_error("no decode ran");
  double decode_s = 0, first_s = 0;
  for (int r = 0; r < std::max(1, o.repeat); ++r) {
    const auto t1 = std::chrono::steady_clock::now();
    img = vae->decode(z, pool, tiling);
    if (!img) return report_error(img.status());
    decode_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t1).count();
    if (r == 0) first_s = decode_s;
  }

  double sum = 0, sq = 0;
  const float* p = img->data_as<float>();
  for (int64_t i = 0; i < img->numel(); ++i) sum += p[i], sq += double(p[i]) * p[i];
  const double mean = sum / double(img->numel()),
               stddev = std::sqrt(std::max(0.0, sq / double(img->numel()) - mean * mean));
  const double rss_peak = peak_rss_mib();
  std::printf("vae decode %lldx%lld (latent %lldx%lldx%lld), %s, tiling %s, %d threads\n", (long long)o.height,
              (long long)o.width, (long long)c.latent_channels, (long long)(o.height / f), (long long)(o.width / f),
              o.model.empty() ? "SD3 VAE layout, random weights" : o.model.c_str(),
              o.tiling ? str_cat("on (tile ", o.tile_size, " px, overlap 0.25)").c_str() : "off", pool.num_threads());
  std::printf("load %.2f s, first decode %.2f s, last of %d decodes %.2f s\n", load_s, first_s, std::max(1, o.repeat),
              decode_s);
  std::printf("peak RSS: %.0f MiB after load, %.0f MiB after decode (workspace estimate untiled %.0f MiB)\n",
              rss_loaded, rss_peak, double(vae->decode_workspace_bytes(o.height / f, o.width / f)) / (1 << 20));
  std::printf("output %s mean %.4f std %.4f\n", img->describe().c_str(), mean, stddev);
  std::printf("{\"decode_s\": %.3f, \"peak_rss_mib\": %.0f, \"tiling\": %s, \"height\": %lld, \"width\": %lld}\n",
              decode_s, rss_peak, o.tiling ? "true" : "false", (long long)o.height, (long long)o.width);
  return std::isfinite(mean) ? kExitOk : kExitRuntimeError;
}

Runner setup(CLI::App& sub) {
  auto o = std::make_shared<Options>();
  sub.add_option("--model", o->model, "AutoencoderKL folder / file (default: SD3 VAE layout with random weights)");
  sub.add_option("--height", o->height, "Image height in pixels")->capture_default_str();
  sub.add_option("--width", o->width, "Image width in pixels")->capture_default_str();
  sub.add_flag("--tiling", o->tiling, "Decode in overlapping tiles (diffusers' enable_tiling)");
  sub.add_option("--tile-size", o->tile_size, "Tile size in pixels when tiling")->capture_default_str();
  sub.add_option("--threads", o->threads, "Worker threads (default: QUILL_THREADS or all cores)");
  sub.add_option("--repeat", o->repeat, "Decode this many times; the last time is reported")->capture_default_str();
  return [o] { return run(*o); };
}

}  // namespace
QUILL_COMMAND(bench_vae, "bench-vae", "Time one VAE decode on the CPU and report peak memory", setup);
}  // namespace quill::cli
