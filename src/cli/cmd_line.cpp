// `quill line`: text (+ a style reference image) -> a PNG of that line in that hand.
#include <sys/stat.h>
#include <chrono>
#include <cstdio>

#include <algorithm>

#include <nlohmann/json.hpp>

#include "cli/batch_lines.h"
#include "cli/command.h"
#include "cli/progress.h"
#include "cli/validators.h"
#include "core/input_files.h"
#include "core/memory_stats.h"
#include "io/image.h"
#include "io/output_file.h"
#include "quill/line_studio.h"
#include "text/utf8.h"

namespace quill::cli {
namespace {

struct Options {
  std::string text, style, model, font, output, batch_file, overflow = "error", device = "auto", weights = "f32";
  int steps = 0, threads = 0, max_batch = 8;  // steps/cfg/shift/start_sigma unset: the model's sampler.json
  float cfg = -1.0f, shift = 0.0f;
  float start_sigma = -1.0f;  // unset: the model's sampler.json, else 1
  std::string guide_glyph;    // unset: the model's sampler.json, else off
  uint64_t seed = 0;
  bool no_style = false, diag = false, skip_existing = false, ungated = false;
};

// Lines of a batch are generated and written in chunks of this many batches, so memory stays flat
// however long the file is and the first PNGs appear within seconds (plans are per width bucket
// and reused across chunks).
constexpr size_t kBatchChunkBatches = 4;

struct Totals {
  LineTiming t;
  int64_t written = 0, skipped = 0;
  int64_t lines_missing_glyphs = 0;
};

// Lines of a batch warned about one by one; the rest are counted in one summary line.
constexpr int64_t kMissingGlyphWarnings = 10;

void warn_missing_glyphs(const LineResult& li, int64_t number, Totals& totals) {
  if (li.missing_glyphs.empty()) return;
  if (++totals.lines_missing_glyphs > kMissingGlyphWarnings) return;
  std::string list;
  for (uint32_t cp : li.missing_glyphs) list += (list.empty() ? "" : ", ") + describe_code_point(cp);
  const std::string where = number > 0 ? str_cat("line ", number, ": ") : "";
  std::fprintf(stderr,
               "quill: warning: %sthe glyph font has no glyph for %s; the model saw a .notdef box there, so the "
               "line will not show %s (try --font with a font that has them; the model was trained on DejaVu "
               "Sans)\n",
               where.c_str(), list.c_str(), li.missing_glyphs.size() == 1 ? "it" : "them");
}

// Generates `texts` (with their batch line numbers, or 0 for --text) and writes each PNG.
Status generate_and_write(LineStudio& studio, LineRequest& req, const std::vector<int64_t>& numbers, const Options& o,
                          Totals& totals) {
  LineTiming t;
  QUILL_ASSIGN_OR_RETURN(std::vector<LineResult> lines, studio.generate(req, &t));
  for (size_t i = 0; i < lines.size(); ++i) {
    const LineResult& li = lines[i];
    const std::string path = numbers[i] > 0 ? numbered_output(o.output, numbers[i]) : o.output;
    QUILL_RETURN_IF_ERROR(write_png(path, Image{int(li.width), int(li.height), 1, li.gray}));
    warn_missing_glyphs(li, numbers[i], totals);
    if (numbers[i] == 0) std::printf("wrote %s (%lldx%lld)\n", path.c_str(), (long long)li.width, (long long)li.height);
    ++totals.written;
  }
  totals.t.style_ms += t.style_ms;
  totals.t.render_ms += t.render_ms;
  totals.t.sample_ms += t.sample_ms;
  totals.t.lines += t.lines;
  totals.t.plan_builds = t.plan_builds;
  totals.t.plan_reuses = t.plan_reuses;
  return Status::ok();
}

// --batch-file: read, generate and write in chunks; with --skip-existing, lines whose output
// exists are not generated again (a killed run resumes where it stopped).
Status run_batch(LineStudio& studio, LineRequest& req, const Options& o, Totals& totals) {
  QUILL_ASSIGN_OR_RETURN(int64_t total, BatchLines::count(o.batch_file));
  QUILL_ASSIGN_OR_RETURN(auto batch, BatchLines::open(o.batch_file));
  Progress progress("lines", int(std::max<int64_t>(total, 0)), "lines");
  std::vector<int64_t> numbers;
  int64_t seen = 0, done_before = 0;
  req.on_progress = [&](const LineProgress& p) { progress.update(int(done_before + p.lines_done)); };
  std::string text;
  int64_t number = 0;
  for (;;) {
    QUILL_ASSIGN_OR_RETURN(bool more, batch->next(&text, &number));
    if (more) {
      ++seen;
      struct stat sb {};
      if (o.skip_existing && ::stat(numbered_output(o.output, number).c_str(), &sb) == 0) {
        ++totals.skipped;
        ++done_before;
        progress.update(int(done_before));
      } else {
        req.texts.push_back(text);
        numbers.push_back(number);
      }
    }
    if (!req.texts.empty() && (!more || req.texts.size() >= kBatchChunkBatches * size_t(o.max_batch))) {
      QUILL_RETURN_IF_ERROR(generate_and_write(studio, req, numbers, o, totals));
      done_before += int64_t(req.texts.size());
      req.texts.clear();
      numbers.clear();
    }
    if (!more) break;
  }
  progress.finish();
  if (seen == 0) return invalid_argument("the batch file has no lines").with_file(o.batch_file);
  return Status::ok();
}

int run(const Options& o) {
  if (!o.text.empty() && !o.batch_file.empty())
    return report_error(invalid_argument("give --text or --batch-file, not both"));
  if (o.text.empty() && o.batch_file.empty())
    return report_error(invalid_argument("give --text (a non-empty line) or --batch-file"));
  if (!o.style.empty() && o.no_style)
    return report_error(invalid_argument("give at most one of --style and --no-style"));
  if (o.skip_existing && o.batch_file.empty())
    return report_error(invalid_argument("--skip-existing needs --batch-file"));
  auto device = parse_device_choice(o.device);
  if (!device) return report_error(device.status());
  // Refuse an unwritable output (a device, a FIFO, a directory) before loading anything.
  if (Status st = check_output_path(o.batch_file.empty() ? o.output : numbered_output(o.output, 1)); !st)
    return report_error(st);

  const auto t0 = std::chrono::steady_clock::now();
  LineStudioOptions so;
  so.model_dir = o.model;
  so.font_path = o.font;
  so.threads = o.threads;
  so.device = *device;
  so.weights = o.weights;
  so.ungated_weights = o.ungated;
  auto studio_r = LineStudio::open(so);
  if (!studio_r) return report_error(studio_r.status());
  LineStudio& studio = **studio_r;
  const double load_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();

  LineRequest req;
  req.style = o.no_style ? LineStyle::none() : o.style.empty() ? LineStyle::model_default() : LineStyle::file(o.style);
  LineSampling s = studio.defaults();
  if (o.steps > 0) s.steps = o.steps;
  if (o.cfg >= 0.0f) s.guidance_scale = o.cfg;
  if (o.shift > 0.0f) s.shift = o.shift;
  if (o.start_sigma > 0.0f) s.start_sigma = o.start_sigma;
  if (!o.guide_glyph.empty()) s.guide_glyph = o.guide_glyph == "on";
  req.sampling = s;
  req.seed = o.seed;
  req.clamp_overflow = o.overflow == "clamp";
  req.max_batch = o.max_batch;
  Totals totals;
  if (o.batch_file.empty()) {
    req.texts = {o.text};
    Status st = generate_and_write(studio, req, {0}, o, totals);
    if (!st) return report_error(st);
  } else {
    Status st = run_batch(studio, req, o, totals);
    if (!st) return report_error(st);
    std::printf("wrote %lld line(s) as %s%s\n", (long long)totals.written, numbered_output(o.output, 1).c_str(),
                totals.written > 1 ? " ..." : "");
    if (totals.skipped) std::printf("skipped %lld line(s) whose output exists\n", (long long)totals.skipped);
    if (totals.lines_missing_glyphs > kMissingGlyphWarnings)
      std::fprintf(stderr, "quill: warning: %lld more line(s) have characters the glyph font cannot draw\n",
                   (long long)(totals.lines_missing_glyphs - kMissingGlyphWarnings));
  }
  const LineTiming& t = totals.t;
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
  sub.add_option("--batch-file", o->batch_file,
                 "a file with one text per line (blank lines skipped); line N is written to <stem>_NNNN<ext> of -o, "
                 "in chunks as they finish");
  sub.add_flag("--skip-existing", o->skip_existing, "with --batch-file: do not redo lines whose output exists");
  sub.add_option("--style", o->style,
                 "style reference image (PNG or JPEG) of the hand to imitate (default: the model's "
                 "style_reference.png, if it has one)");
  sub.add_flag("--no-style", o->no_style, "no style reference: the model's unconditional hand");
  sub.add_option("--model", o->model, "line model folder (default: the embedded models/quill-line)");
  sub.add_option("--font", o->font,
                 "font for the glyph line (default: DejaVu Sans); must match the model's training font");
  sub.add_option("--steps", o->steps, "sampling steps (default: the model's sampler.json, else 20)")
      ->check(CLI::Range(int(kLineStepsRange.lo), int(kLineStepsRange.hi)));
  sub.add_option("--cfg", o->cfg,
                 "style guidance scale (<= 1: off; run as one 2x batch; default: sampler.json, else 2)")
      ->check(FiniteRange(kLineGuidanceRange.lo, kLineGuidanceRange.hi));
  sub.add_option("--shift", o->shift, "flow-matching shift (default: sampler.json, else 1)")
      ->check(FiniteRange(kLineShiftRange.lo, kLineShiftRange.hi));
  sub.add_option("--start-sigma", o->start_sigma,
                 "1: sample from pure noise; < 1: start from the glyph line noised to this sigma (default: the "
                 "model's sampler.json, else 1)")
      ->check(FiniteRange(kLineStartSigmaRange.lo, kLineStartSigmaRange.hi));
  sub.add_option("--guide-glyph", o->guide_glyph,
                 "on: guidance on the text as well as the style (the unconditional branch gets a blank glyph line; "
                 "for models trained with --glyph-dropout); default: the model's sampler.json, else off")
      ->check(CLI::IsMember({"on", "off"}));
  sub.add_option("--seed", o->seed, "noise seed (0 .. 2^64 - 1)")->check(Seed64());
  sub.add_option("--overflow", o->overflow, "too-long lines: error, or clamp")
      ->check(CLI::IsMember({"error", "clamp"}));
  sub.add_option("--max-batch", o->max_batch, "lines sampled together per bucket")->check(CLI::Range(1, 256));
  sub.add_option("--threads", o->threads, "CPU threads")->check(CLI::Range(1, 1024));
  sub.add_option("--weights", o->weights,
                 "f32 (default), or a quantized variant (q8_0, fp8_e4m3, tq2_0_g128): used only if the model's "
                 "variants.json says it passed the quality gate");
  sub.add_flag("--ungated", o->ungated, "use a --weights variant without checking its verdict (for evaluating it)");
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
