// `quill line`: text (+ a style reference image) -> a PNG of that line in that hand.
#include <chrono>
#include <cstdio>
#include <fstream>

#include <nlohmann/json.hpp>

#include "cli/command.h"
#include "cli/progress.h"
#include "core/memory_stats.h"
#include "io/image.h"
#include "pipeline/line_pipeline.h"
#include "pipeline/style_encoder_dinov2.h"

namespace quill::cli {
namespace {

struct Options {
  std::string text, style, model, font, output, batch_file, overflow = "error";
  int steps = 0, threads = 0, max_batch = 8;  // steps/cfg/shift/start_sigma unset: the model's sampler.json
  float cfg = -1.0f, shift = 0.0f;
  float start_sigma = -1.0f;  // unset: the model's sampler.json, else 1
  uint64_t seed = 0;
  bool no_style = false;
};

std::string default_model_dir() {
  for (const char* p :
       {"models/quill-line", QUILL_SOURCE_DIR "/models/quill-line", "/usr/share/quill/models/quill-line"}) {
    std::ifstream f(std::string(p) + "/config.json");
    if (f) return p;
  }
  return {};
}

int run(const Options& o) {
  if (o.text.empty() == o.batch_file.empty())
    return report_error(invalid_argument("give exactly one of --text or --batch-file"));
  std::string model = o.model.empty() ? default_model_dir() : o.model;
  if (model.empty())
    return report_error(
        not_found("the default line model is missing (looked for models/quill-line/config.json in the working "
                  "directory, the source tree and /usr/share/quill); pass --model DIR with a line model folder"));
  // Without --style, the model's own default hand (<model>/style_reference.png) when it ships one.
  std::string style = o.style;
  if (!style.empty() && o.no_style) return report_error(invalid_argument("give at most one of --style and --no-style"));
  if (style.empty() && !o.no_style) {
    const std::string fallback = model + "/style_reference.png";
    if (std::ifstream(fallback)) style = fallback;
  }
  std::vector<std::string> texts;
  if (!o.text.empty()) {
    texts.push_back(o.text);
  } else {
    std::ifstream f(o.batch_file);
    if (!f) return report_error(not_found("cannot read the batch file").with_file(o.batch_file));
    for (std::string line; std::getline(f, line);)
      if (line.find_first_not_of(" \t\r") != std::string::npos) texts.push_back(line);
    if (texts.empty()) return report_error(invalid_argument("the batch file has no lines").with_file(o.batch_file));
  }
  ThreadPool::set_global_threads(o.threads > 0 ? o.threads : default_thread_count());
  const auto t0 = std::chrono::steady_clock::now();
  auto pipe = LinePipeline::open(model, o.font, ThreadPool::global());
  if (!pipe) return report_error(pipe.status());
  auto enc = Dinov2StyleEncoder::open_if_present(model, ThreadPool::global());
  if (!enc) return report_error(enc.status());
  if (*enc) (*pipe)->set_style_encoder(std::move(enc.value()));
  const double load_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();

  auto defaults = line_options_for_model(model);
  if (!defaults) return report_error(defaults.status());
  LineOptions lo = *defaults;
  if (o.steps > 0) lo.steps = o.steps;
  if (o.cfg >= 0.0f) lo.guidance_scale = o.cfg;
  if (o.shift > 0.0f) lo.shift = o.shift;
  if (o.start_sigma > 0.0f) lo.start_sigma = o.start_sigma;
  lo.seed = o.seed;
  lo.overflow = o.overflow == "clamp" ? OverflowPolicy::kClamp : OverflowPolicy::kError;
  LineTimings t;
  Progress progress("lines", int(texts.size()), "lines");
  auto lines = (*pipe)->generate(texts, style, lo, o.max_batch, &t, [&](int d, int) { progress.update(d); });
  progress.finish();
  if (!lines) return report_error(lines.status());
  for (size_t i = 0; i < lines->size(); ++i) {
    const LineImage& li = (*lines)[i];
    std::string path = o.output;
    if (lines->size() > 1) {
      const auto dot = path.rfind('.');
      char num[32];
      std::snprintf(num, sizeof(num), "_%04zu", i);
      path = (dot == std::string::npos ? path : path.substr(0, dot)) + num +
             (dot == std::string::npos ? ".png" : path.substr(dot));
    }
    Image img{int(li.width), int(li.height), 1, li.gray};
    Status st = write_png(path, img);
    if (!st) return report_error(st);
    if (lines->size() == 1)
      std::printf("wrote %s (%lldx%lld)\n", path.c_str(), (long long)li.width, (long long)li.height);
  }
  std::printf("model %s, style %s, start sigma %.2f\n", model.c_str(),
              style.empty() ? "none (unconditional)" : style.c_str(), lo.start_sigma);
  const auto ps = (*pipe)->engine().plan_stats();
  std::printf(
      "timing: load %.0f ms, style %.0f ms, render %.0f ms, sample %.0f ms for %d line(s) (%.2f lines/s, %d steps, "
      "plan builds %llu, plan reuses %llu); peak RSS %.1f MiB\n",
      load_ms, t.style_ms, t.render_ms, t.sample_ms, t.lines, t.lines / (t.sample_ms / 1e3 + 1e-9), lo.steps,
      (unsigned long long)ps.builds, (unsigned long long)ps.hits, double(peak_rss_bytes()) / (1024.0 * 1024.0));
  return kExitOk;
}

Runner setup(CLI::App& sub) {
  auto o = std::make_shared<Options>();
  sub.add_option("--text", o->text, "the line to write (UTF-8)");
  sub.add_option("--batch-file", o->batch_file, "a file with one line per row; outputs get _NNNN suffixes");
  sub.add_option("--style", o->style,
                 "style reference image (PNG or JPEG) of the hand to imitate (default: the model's "
                 "style_reference.png, if it has one)");
  sub.add_flag("--no-style", o->no_style, "no style reference: the model's unconditional hand");
  sub.add_option("--model", o->model, "line model folder (default: the embedded models/quill-line)");
  sub.add_option("--font", o->font,
                 "font for the glyph line (default: DejaVu Sans); must match the model's training font");
  sub.add_option("--steps", o->steps, "sampling steps (default: the model's sampler.json, else 20)")
      ->check(CLI::Range(1, 1000));
  sub.add_option("--cfg", o->cfg,
                 "style guidance scale (<= 1: off; run as one 2x batch; default: sampler.json, else 2)")
      ->check(CLI::Range(0.0, 50.0));
  sub.add_option("--shift", o->shift, "flow-matching shift (default: sampler.json, else 1)")
      ->check(CLI::Range(0.01, 100.0));
  sub.add_option("--start-sigma", o->start_sigma,
                 "1: sample from pure noise; < 1: start from the glyph line noised to this sigma (default: the "
                 "model's sampler.json, else 1)")
      ->check(CLI::Range(0.01, 1.0));
  sub.add_option("--seed", o->seed, "noise seed");
  sub.add_option("--overflow", o->overflow, "too-long lines: error, or clamp")
      ->check(CLI::IsMember({"error", "clamp"}));
  sub.add_option("--max-batch", o->max_batch, "lines sampled together per bucket")->check(CLI::Range(1, 256));
  sub.add_option("--threads", o->threads, "CPU threads")->check(CLI::Range(1, 1024));
  sub.add_option("-o,--output", o->output, "output PNG")->required();
  return [o] { return run(*o); };
}

}  // namespace
QUILL_COMMAND(line, "line", "Write a line of text in the hand of a style reference image (handwriting line studio)",
              setup);
}  // namespace quill::cli
