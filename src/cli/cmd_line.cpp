// `quill line`: text (+ a style reference image) -> a PNG of that line in that hand.
#include <chrono>
#include <cstdio>
#include <fstream>

#include <nlohmann/json.hpp>

#include "cli/command.h"
#include "cli/progress.h"
#include "cli/validators.h"
#include "core/input_files.h"
#include "core/memory_stats.h"
#include "io/image.h"
#include "quill/line_studio.h"

namespace quill::cli {
namespace {

struct Options {
  std::string text, style, model, font, output, batch_file, overflow = "error", device = "auto";
  int steps = 0, threads = 0, max_batch = 8;  // steps/cfg/shift/start_sigma unset: the model's sampler.json
  float cfg = -1.0f, shift = 0.0f;
  float start_sigma = -1.0f;  // unset: the model's sampler.json, else 1
  uint64_t seed = 0;
  bool no_style = false, diag = false;
};

Result<std::vector<std::string>> read_texts(const Options& o) {
  std::vector<std::string> texts;
  if (!o.text.empty()) return std::vector<std::string>{o.text};
  std::ifstream f(o.batch_file);
  note_input_file(o.batch_file);
  if (!f) return not_found("cannot read the batch file").with_file(o.batch_file);
  for (std::string line; std::getline(f, line);)
    if (line.find_first_not_of(" \t\r") != std::string::npos) texts.push_back(line);
  if (texts.empty()) return invalid_argument("the batch file has no lines").with_file(o.batch_file);
  return texts;
}

// out.png -> out_0003.png for the fourth line of a batch.
std::string numbered(const std::string& path, size_t i) {
  const auto dot = path.rfind('.');
  char num[32];
  std::snprintf(num, sizeof(num), "_%04zu", i);
  return (dot == std::string::npos ? path : path.substr(0, dot)) + num +
         (dot == std::string::npos ? ".png" : path.substr(dot));
}

int run(const Options& o) {
  if (o.text.empty() == o.batch_file.empty())
    return report_error(invalid_argument("give exactly one of --text or --batch-file"));
  if (!o.style.empty() && o.no_style)
    return report_error(invalid_argument("give at most one of --style and --no-style"));
  auto texts = read_texts(o);
  if (!texts) return report_error(texts.status());
  auto device = parse_device_choice(o.device);
  if (!device) return report_error(device.status());

  const auto t0 = std::chrono::steady_clock::now();
  LineStudioOptions so;
  so.model_dir = o.model;
  so.font_path = o.font;
  so.threads = o.threads;
  so.device = *device;
  auto studio_r = LineStudio::open(so);
  if (!studio_r) return report_error(studio_r.status());
  LineStudio& studio = **studio_r;
  const double load_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();

  LineRequest req;
  req.texts = std::move(texts.value());
  req.style = o.no_style ? LineStyle::none() : o.style.empty() ? LineStyle::model_default() : LineStyle::file(o.style);
  LineSampling s = studio.defaults();
  if (o.steps > 0) s.steps = o.steps;
  if (o.cfg >= 0.0f) s.guidance_scale = o.cfg;
  if (o.shift > 0.0f) s.shift = o.shift;
  if (o.start_sigma > 0.0f) s.start_sigma = o.start_sigma;
  req.sampling = s;
  req.seed = o.seed;
  req.clamp_overflow = o.overflow == "clamp";
  req.max_batch = o.max_batch;
  Progress progress("lines", int(req.texts.size()), "lines");
  req.on_progress = [&](const LineProgress& p) { progress.update(p.lines_done); };
  LineTiming t;
  auto lines = studio.generate(req, &t);
  progress.finish();
  if (!lines) return report_error(lines.status());
  for (size_t i = 0; i < lines->size(); ++i) {
    const LineResult& li = (*lines)[i];
    const std::string path = lines->size() > 1 ? numbered(o.output, i) : o.output;
    Status st = write_png(path, Image{int(li.width), int(li.height), 1, li.gray});
    if (!st) return report_error(st);
    if (lines->size() == 1)
      std::printf("wrote %s (%lldx%lld)\n", path.c_str(), (long long)li.width, (long long)li.height);
  }
  const std::string style = o.no_style ? "" : o.style.empty() ? studio.default_style_path() : o.style;
  std::printf("model %s, style %s, start sigma %.2f, device %s\n", studio.model_dir().c_str(),
              style.empty() ? "none (unconditional)" : style.c_str(), s.start_sigma, studio.device().c_str());
  std::printf(
      "timing: load %.0f ms, style %.0f ms, render %.0f ms, sample %.0f ms for %d line(s) (%.2f lines/s, %d steps, "
      "plan builds %llu, plan reuses %llu); peak RSS %.1f MiB\n",
      load_ms, t.style_ms, t.render_ms, t.sample_ms, t.lines, t.lines / (t.sample_ms / 1e3 + 1e-9), s.steps,
      (unsigned long long)t.plan_builds, (unsigned long long)t.plan_reuses,
      double(peak_rss_bytes()) / (1024.0 * 1024.0));
  if (o.diag) std::printf("%s", studio.op_counts().c_str());
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
      ->check(FiniteRange(0.0, 50.0));
  sub.add_option("--shift", o->shift, "flow-matching shift (default: sampler.json, else 1)")
      ->check(FiniteRange(0.01, 100.0));
  sub.add_option("--start-sigma", o->start_sigma,
                 "1: sample from pure noise; < 1: start from the glyph line noised to this sigma (default: the "
                 "model's sampler.json, else 1)")
      ->check(FiniteRange(0.01, 1.0));
  sub.add_option("--seed", o->seed, "noise seed (0 .. 2^64 - 1)")->check(Seed64());
  sub.add_option("--overflow", o->overflow, "too-long lines: error, or clamp")
      ->check(CLI::IsMember({"error", "clamp"}));
  sub.add_option("--max-batch", o->max_batch, "lines sampled together per bucket")->check(CLI::Range(1, 256));
  sub.add_option("--threads", o->threads, "CPU threads")->check(CLI::Range(1, 1024));
  sub.add_option("--device", o->device, "auto (GPU when available), gpu (required) or cpu")
      ->check(CLI::IsMember({"auto", "gpu", "cpu"}));
  sub.add_flag("--diag", o->diag, "Print how many ops of each kind ran on which device");
  sub.add_option("-o,--output", o->output, "output PNG")->required();
  return [o] { return run(*o); };
}

}  // namespace
QUILL_COMMAND(line, "line", "Write a line of text in the hand of a style reference image (handwriting line studio)",
              setup);
}  // namespace quill::cli
