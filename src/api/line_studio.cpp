// The public LineStudio (include/quill/line_studio.h) over the line pipeline, the Dinov2 style
// encoder and the device selection. Request assembly (model defaults, the default hand, argument
// checks) lives here so the CLI, the server and the Python package share it.
#include "quill/line_studio.h"

#include <chrono>
#include <cmath>
#include <fstream>
#include <mutex>

#include "api/line_variants.h"
#include "core/thread_pool.h"
#include "io/image.h"
#include "pipeline/line_pipeline.h"
#include "pipeline/style_encoder_dinov2.h"
#include "runtime/device_select.h"

namespace quill {

std::string default_line_model_dir() {
  for (const char* p :
       {"models/quill-line", QUILL_SOURCE_DIR "/models/quill-line", "/usr/share/quill/models/quill-line"}) {
    std::ifstream f(std::string(p) + "/config.json");
    if (f) return p;
  }
  return {};
}

namespace {

// NaN fails every range check (comparisons with NaN are false).
// Bounds are compared as floats: settings are float fields, and 0.01 as a float is just below 0.01.
Status check_range(const char* field, double v, SettingRange r) {
  if (!(v >= double(float(r.lo)) && v <= double(float(r.hi)))) return invalid_argument(field, " must be in [", r.lo, ", ", r.hi, "], got ", v);
  return Status::ok();
}

Status check_sampling(const LineSampling& s) {
  QUILL_RETURN_IF_ERROR(check_range("steps", s.steps, kLineStepsRange));
  QUILL_RETURN_IF_ERROR(check_range("guidance_scale", s.guidance_scale, kLineGuidanceRange));
  QUILL_RETURN_IF_ERROR(check_range("shift", s.shift, kLineShiftRange));
  return check_range("start_sigma", s.start_sigma, kLineStartSigmaRange);
}

// A kPixels style as an Image: its own vector, or a copy of the caller's buffer once its sides are
// known to be sane (style_reference_from_image checks the rest).
Result<Image> pixels_image(const LineStyle& style) {
  if (!style.data) return Image{style.width, style.height, style.channels, style.pixels};
  if (style.width < 1 || style.height < 1 || style.width > kMaxImageSide || style.height > kMaxImageSide ||
      style.channels < 1 || style.channels > 4)
    return invalid_argument("style image is ", style.width, "x", style.height, "x", style.channels,
                            "; sides must be in [1, ", kMaxImageSide, "] and channels 1 to 4");
  const size_t n = size_t(style.width) * size_t(style.height) * size_t(style.channels);
  return Image{style.width, style.height, style.channels, std::vector<uint8_t>(style.data, style.data + n)};
}

LineOptions to_line_options(const LineSampling& s, bool clamp_overflow) {
  LineOptions lo;
  lo.steps = s.steps;
  lo.guidance_scale = s.guidance_scale;
  lo.shift = s.shift;
  lo.start_sigma = s.start_sigma;
  lo.guide_glyph = s.guide_glyph;
  lo.overflow = clamp_overflow ? OverflowPolicy::kClamp : OverflowPolicy::kError;
  return lo;
}

class LineStudioImpl final : public LineStudio {
 public:
  Status init(const LineStudioOptions& o) {
    model_dir_ = o.model_dir.empty() ? default_line_model_dir() : o.model_dir;
    if (model_dir_.empty())
      return not_found(
          "the default line model is missing (looked for models/quill-line/config.json in the working directory, "
          "the source tree and /usr/share/quill); pass a line model folder");
    pool_ = std::make_unique<ThreadPool>(o.threads > 0 ? o.threads : default_thread_count());
    QUILL_ASSIGN_OR_RETURN(device_, select_device(o.device));
    QUILL_ASSIGN_OR_RETURN(DType weights, line_weights_for(model_dir_, o.weights, o.ungated_weights));
    QUILL_ASSIGN_OR_RETURN(pipe_, LinePipeline::open(model_dir_, o.font_path, *pool_, weights));
    pipe_->engine().set_primary_backend(device_.gpu.get());
    QUILL_ASSIGN_OR_RETURN(auto enc, Dinov2StyleEncoder::open_if_present(model_dir_, *pool_));
    if (enc) {
      enc->ops().set_primary(device_.gpu.get());
      pipe_->set_style_encoder(std::move(enc));
    }
    QUILL_ASSIGN_OR_RETURN(LineOptions d, line_options_for_model(model_dir_));
    defaults_.steps = d.steps;
    defaults_.guidance_scale = d.guidance_scale;
    defaults_.shift = d.shift;
    defaults_.start_sigma = d.start_sigma;
    defaults_.guide_glyph = d.guide_glyph;
    const std::string hand = model_dir_ + "/style_reference.png";
    // Without an encoder the picture cannot be used, so the model has no default hand to report.
    if (pipe_->style_encoder() && std::ifstream(hand)) default_style_ = hand;
    return Status::ok();
  }

  const std::string& model_dir() const override { return model_dir_; }
  const LineSampling& defaults() const override { return defaults_; }
  bool has_style_encoder() const override { return pipe_->style_encoder() != nullptr; }
  const std::string& default_style_path() const override { return default_style_; }
  const std::string& device() const override { return device_.description; }
  int64_t line_height() const override { return pipe_->engine().model().config().line_height; }
  int64_t max_line_width() const override { return pipe_->engine().model().config().max_line_width; }

  Result<std::vector<LineResult>> generate(const LineRequest& req, LineTiming* timing) override {
    if (req.texts.empty()) return invalid_argument("the request has no texts");
    QUILL_RETURN_IF_ERROR(check_range("max_batch", req.max_batch, {1, 256}));
    const LineSampling s = req.sampling ? *req.sampling : defaults_;
    QUILL_RETURN_IF_ERROR(check_sampling(s));

    std::lock_guard<std::mutex> lock(mu_);
    const auto t0 = std::chrono::steady_clock::now();
    QUILL_ASSIGN_OR_RETURN(std::vector<float> style, embed_style_locked(req.style));
    const double style_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();

    LineOptions lo = to_line_options(s, req.clamp_overflow);
    lo.seed = req.seed;

    LineProgress progress;
    progress.lines_total = int(req.texts.size());
    progress.steps = s.steps;
    StepControl control;
    control.cancel = req.cancel;
    if (req.on_progress)
      control.on_step = [&](int step, int steps) {
        progress.step = step;
        progress.steps = steps;
        req.on_progress(progress);
      };
    auto on_line = [&](int done, int) {
      progress.lines_done = done;
      if (req.on_progress) req.on_progress(progress);
    };
    LineTimings t;
    QUILL_ASSIGN_OR_RETURN(std::vector<LineImage> lines,
                           pipe_->generate_with_embedding(req.texts, style, lo, req.max_batch, &t, on_line, control));
    std::vector<LineResult> out = to_results(std::move(lines));
    if (timing) {
      const auto ps = pipe_->engine().plan_stats();
      *timing = {style_ms, t.render_ms, t.sample_ms, t.lines, ps.builds, ps.hits};
    }
    return out;
  }

  Result<StyleEmbedding> embed_style(const LineStyle& style) override {
    std::lock_guard<std::mutex> lock(mu_);
    QUILL_ASSIGN_OR_RETURN(std::vector<float> e, embed_style_locked(style));
    return StyleEmbedding(std::make_shared<const std::vector<float>>(std::move(e)));
  }

  Result<int64_t> bucket_width(const std::string& text, bool clamp_overflow) override {
    // The renderer is thread-safe; no need to wait for a running batch.
    QUILL_ASSIGN_OR_RETURN(WidthBucket b,
                           pipe_->bucket_for(text, clamp_overflow ? OverflowPolicy::kClamp : OverflowPolicy::kError));
    return b.canvas_width;
  }

  std::vector<int64_t> bucket_widths() const override {
    std::vector<int64_t> w;
    for (int64_t x = round_up(line_height(), 16); x <= max_line_width(); x += 16) w.push_back(x);
    return w;
  }

  Status warm_up(const std::vector<int64_t>& canvas_widths, int plan_batch) override {
    QUILL_RETURN_IF_ERROR(check_range("plan_batch", plan_batch, {1, 256}));
    std::lock_guard<std::mutex> lock(mu_);
    return pipe_->warm_up(canvas_widths, plan_batch);
  }

  Result<std::vector<LineResult>> generate_rows(const LineRowsRequest& req) override {
    if (req.rows.empty()) return invalid_argument("the request has no rows");
    QUILL_RETURN_IF_ERROR(check_range("plan_batch", req.plan_batch, {0, 256}));
    const LineSampling s = req.sampling ? *req.sampling : defaults_;
    QUILL_RETURN_IF_ERROR(check_sampling(s));
    std::vector<LineRowInput> rows(req.rows.size());
    for (size_t i = 0; i < rows.size(); ++i) {
      if (req.rows[i].style && !req.rows[i].style->empty() && !pipe_->style_encoder())
        return invalid_argument("row ", i + 1, " has a style but this model has no style encoder");
      rows[i] = {req.rows[i].text, req.rows[i].style.get(), req.rows[i].seed};
    }
    const LineOptions lo = to_line_options(s, req.clamp_overflow);
    StepControl control;
    control.cancel = req.cancel;
    if (req.on_step) control.on_step = req.on_step;
    std::lock_guard<std::mutex> lock(mu_);
    QUILL_ASSIGN_OR_RETURN(std::vector<LineImage> lines, pipe_->generate_rows(rows, lo, req.plan_batch, control, req.ragged,
                                                                             req.pad_to_width / downscale()));
    return to_results(std::move(lines));
  }

  int64_t downscale() const { return pipe_->engine().model().config().downscale; }
  uint64_t op_fallbacks() const override {
    std::lock_guard<std::mutex> lock(mu_);
    uint64_t n = 0;
    for (uint64_t f : pipe_->engine().ops().stats().fallbacks) n += f;
    if (StyleEncoder* enc = pipe_->style_encoder())
      for (uint64_t f : enc->ops().stats().fallbacks) n += f;
    return n;
  }
  uint64_t plan_builds() const override { return pipe_->engine().plan_stats().builds; }
  uint64_t plan_reuses() const override { return pipe_->engine().plan_stats().hits; }

  std::string op_counts() const override {
    std::lock_guard<std::mutex> lock(mu_);
    std::string s = "line model ops:\n" + pipe_->engine().ops().stats().to_string();
    if (StyleEncoder* enc = pipe_->style_encoder()) s += "style encoder ops:\n" + enc->ops().stats().to_string();
    return s;
  }

 private:
  static std::vector<LineResult> to_results(std::vector<LineImage> lines) {
    std::vector<LineResult> out(lines.size());
    for (size_t i = 0; i < lines.size(); ++i) {
      out[i].text = std::move(lines[i].text);
      out[i].width = lines[i].width;
      out[i].height = lines[i].height;
      out[i].gray = std::move(lines[i].gray);
      out[i].bucket_width = lines[i].bucket.canvas_width;
      out[i].missing_glyphs = std::move(lines[i].missing_glyphs);
    }
    return out;
  }

  Result<std::vector<float>> embed_style_locked(const LineStyle& style) {
    std::string path;
    switch (style.kind) {
      case LineStyle::Kind::kNone:
        return std::vector<float>();
      case LineStyle::Kind::kModelDefault:
        if (default_style_.empty()) return std::vector<float>();
        path = default_style_;
        break;
      case LineStyle::Kind::kImageFile:
        if (style.path.empty()) return invalid_argument("style: an image file was asked for but no path given");
        path = style.path;
        break;
      case LineStyle::Kind::kPixels:
        break;
    }
    StyleEncoder* enc = pipe_->style_encoder();
    if (!enc)
      return invalid_argument("this model has no style encoder (no style_encoder/ folder), so a style image cannot be used; "
                         "leave the style out (or --no-style) to write in the model's own hand")
          .with_file(model_dir_);
    if (style.kind == LineStyle::Kind::kPixels) {
      QUILL_ASSIGN_OR_RETURN(Image image, pixels_image(style));
      return enc->embed_image(image);
    }
    return enc->embed(path);
  }

  std::string model_dir_, default_style_;
  std::unique_ptr<ThreadPool> pool_;
  DeviceSelection device_;
  std::unique_ptr<LinePipeline> pipe_;
  LineSampling defaults_;
  mutable std::mutex mu_;
};

}  // namespace

Result<std::unique_ptr<LineStudio>> LineStudio::open(const LineStudioOptions& options) {
  auto s = std::make_unique<LineStudioImpl>();
  QUILL_RETURN_IF_ERROR(s->init(options));
  return std::unique_ptr<LineStudio>(std::move(s));
}

}  // namespace quill
