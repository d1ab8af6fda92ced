// The handwriting line studio as a library: open a line model folder once (its weights, sampling
// defaults from sampler.json, its style encoder and default hand), then turn texts + a style into
// gray line images. The `quill line` command, the HTTP server and the Python package all call this.
//
//   auto studio = quill::LineStudio::open({}).value();          // the embedded default model
//   quill::LineRequest r;
//   r.texts = {"Kongl. Maj:ts nådiga förordning"};
//   auto lines = studio->generate(r).value();                   // lines[0].gray: height x width bytes
//
// Lines of one request are grouped by width bucket and sampled up to `max_batch` at a time with
// classifier-free guidance as one 2x batch; each bucket's plan is built once and reused by every
// later request. Thread-safety: generate() may be called from several threads; calls run one at a
// time on the studio's engines (a server that wants them batched together puts several texts in
// one request).
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "quill/device.h"
#include "quill/status.h"

namespace quill {

struct LineStudioOptions {
  std::string model_dir;  // empty: the embedded default model (models/quill-line), see default_line_model_dir()
  std::string font_path;  // empty: the glyph-line default (DejaVu Sans); must match the model's training font
  int threads = 0;        // <= 0: QUILL_THREADS or all cores
  DeviceChoice device = DeviceChoice::kAuto;
  // "" or "f32": the model's weights. q8_0, fp8_e4m3, tq2_0_g128 (also bf16, f16): those weights quantized
  // at load, only if <model>/variants.json says that variant passed the model's quality gate.
  std::string weights;
  bool ungated_weights = false;  // use a variant without (or despite) its verdict
};

// The accepted range of each sampling setting, one definition for sampler.json, requests and the
// `quill line` options.
struct SettingRange {
  double lo, hi;
};
inline constexpr SettingRange kLineStepsRange{1, 1000}, kLineGuidanceRange{0.0, 50.0}, kLineShiftRange{0.01, 100.0},
    kLineStartSigmaRange{0.01, 1.0};

// Sampling settings: LineStudio::defaults() holds the model's (sampler.json over built-in defaults).
struct LineSampling {
  int steps = 20;
  float guidance_scale = 2.0f;  // <= 1: no guidance
  float shift = 1.0f;
  float start_sigma = 1.0f;  // 1: from pure noise; < 1: from the glyph line noised to this sigma
  // Guidance on the text as well as the style: the unconditional branch also gets a blank glyph
  // line. Only for models trained for it (train_line_model.py --glyph-dropout; sampler.json "guide_glyph").
  bool guide_glyph = false;
};

// The hand to imitate.
struct LineStyle {
  enum class Kind : uint8_t {
    kModelDefault,  // the model's style_reference.png when it ships one, else no style
    kNone,          // unconditional: the model's own average hand
    kImageFile,     // a PNG or JPEG file
    kPixels,        // 8-bit pixels in memory (gray, RGB or RGBA, row-major): `pixels`, or `data` when set
  };
  Kind kind = Kind::kModelDefault;
  std::string path;             // kImageFile
  std::vector<uint8_t> pixels;  // kPixels: height x width x channels
  int width = 0, height = 0, channels = 0;
  const uint8_t* data = nullptr;  // kPixels without a copy: the caller's buffer, read during the call only

  static LineStyle model_default() { return {}; }
  static LineStyle none() { return {Kind::kNone, {}, {}, 0, 0, 0}; }
  static LineStyle file(std::string p) { return {Kind::kImageFile, std::move(p), {}, 0, 0, 0}; }
  static LineStyle view(const uint8_t* d, int w, int h, int c) { return {Kind::kPixels, {}, {}, w, h, c, d}; }
};

struct LineProgress {
  int lines_done = 0, lines_total = 0;  // lines finished so far in this request
  int step = 0, steps = 0;              // sampling step of the batch in progress
};

struct LineRequest {
  std::vector<std::string> texts;  // one line each (UTF-8, no newlines)
  LineStyle style;
  std::optional<LineSampling> sampling;  // unset: the model's defaults()
  uint64_t seed = 0;
  bool clamp_overflow = false;  // too-long lines: false = an error, true = cut at the model's max width
  int max_batch = 8;            // lines sampled together per width bucket
  std::function<void(const LineProgress&)> on_progress;  // after every step and every finished line
  const std::atomic<bool>* cancel = nullptr;             // set it from another thread to stop (kCancelled)
};

struct LineResult {
  std::string text;
  int64_t width = 0, height = 0;
  std::vector<uint8_t> gray;  // height x width, 255 = paper
  int64_t bucket_width = 0;   // the width bucket (pixels) the line was sampled in
  // Characters the glyph font cannot draw (first few, as Unicode code points): the model saw a
  // .notdef box for each, so the line will not show them. Callers should tell the user.
  std::vector<uint32_t> missing_glyphs;
};

struct LineTiming {
  double style_ms = 0, render_ms = 0, sample_ms = 0;
  int lines = 0;
  uint64_t plan_builds = 0, plan_reuses = 0;  // over the studio's life
};

// A style embedding from LineStudio::embed_style(): compute it once per reference and reuse it
// (empty: no style, the model's own hand).
using StyleEmbedding = std::shared_ptr<const std::vector<float>>;

// One line of a row-level request (what a server batches across users).
struct LineRow {
  std::string text;
  StyleEmbedding style;  // null or empty: unconditional
  uint64_t seed = 0;     // the row's own noise: the same image as generate() of this one text with this seed
};

struct LineRowsRequest {
  std::vector<LineRow> rows;             // sampled together, one batch per width bucket (or one, ragged)
  std::optional<LineSampling> sampling;  // unset: the model's defaults(); shared by every row
  bool clamp_overflow = false;
  // > 0: run every batch in the plan of this many lines (see warm_up), so a width keeps one plan
  // whatever the batch size; 0: a plan of the exact batch.
  int plan_batch = 0;
  // One batch for all rows at the widest row's bucket: narrower rows are padded and the model's
  // attention never sees the padding, so each row's pixels equal its solo run up to float rounding
  // (rows of one width, not ragged, are bit for bit).
  bool ragged = false;
  int64_t pad_to_width = 0;  // ragged: run at least this wide (canvas pixels; a plan width)
  std::function<void(int step, int steps)> on_step;
  const std::atomic<bool>* cancel = nullptr;
};

class LineStudio {
 public:
  static Result<std::unique_ptr<LineStudio>> open(const LineStudioOptions& options);
  virtual ~LineStudio() = default;

  virtual const std::string& model_dir() const = 0;
  virtual const LineSampling& defaults() const = 0;  // the model's sampler.json over the built-in defaults
  virtual bool has_style_encoder() const = 0;
  virtual const std::string& default_style_path() const = 0;  // empty when the model ships none
  virtual const std::string& device() const = 0;              // "cpu", "cuda (per-op CPU fallback)", ...
  virtual int64_t line_height() const = 0;
  virtual int64_t max_line_width() const = 0;

  virtual Result<std::vector<LineResult>> generate(const LineRequest& request, LineTiming* timing = nullptr) = 0;

  // Row-level API for servers: styles embedded once, rows from many requests sampled as one batch.
  virtual Result<StyleEmbedding> embed_style(const LineStyle& style) = 0;
  // The canvas width (pixels) of the bucket `text` falls in; the line's errors (bad text, too
  // wide without clamping) come out here before any sampling.
  virtual Result<int64_t> bucket_width(const std::string& text, bool clamp_overflow) = 0;
  // Every canvas width a line can have: multiples of 16 from the minimum up to max_line_width().
  virtual std::vector<int64_t> bucket_widths() const = 0;
  // Builds the plans generate_rows(plan_batch) runs in for these widths (the server's warm-up)
  // and makes their memory resident, so the footprint does not grow under load.
  virtual Status warm_up(const std::vector<int64_t>& canvas_widths, int plan_batch) = 0;
  virtual Result<std::vector<LineResult>> generate_rows(const LineRowsRequest& request) = 0;
  virtual uint64_t plan_builds() const = 0;
  virtual uint64_t plan_reuses() const = 0;
  // Ops whose primary device failed and whose CPU result was used, over the studio's life (waits
  // for a running generation).
  virtual uint64_t op_fallbacks() const = 0;
  // Ops run per kind and device (line model and style encoder), one line per kind: for --diag.
  virtual std::string op_counts() const = 0;
};

// The embedded default line model: models/quill-line in the working directory, the source tree or
// /usr/share/quill; empty when none has it.
std::string default_line_model_dir();

}  // namespace quill
