// The handwriting line studio's pipeline: text -> glyph line (FreeType + HarfBuzz) -> width bucket
// -> line model sampling (flow matching, CFG as one 2x batch) -> gray line image. A style
// reference image, when given, is embedded by the model's style encoder (a Dinov2-architecture
// ViT stored in <model>/style_encoder/). Lines of one bucket share one compiled plan.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "io/image.h"
#include "pipeline/flow_sampler.h"
#include "runtime/line_engine.h"
#include "text/width_bucket.h"
#include "text/glyph_line.h"

namespace quill {

// Turns a style reference image into the model's style embedding [style_dim].
class StyleEncoder {
 public:
  virtual ~StyleEncoder() = default;
  virtual Result<std::vector<float>> embed(const std::string& image_path) = 0;
  // From pixels in memory (gray, gray + alpha, RGB or RGBA).
  virtual Result<std::vector<float>> embed_image(const Image& image) = 0;
  // Where its ops run: the Dispatcher of its engine (for a GPU primary and --diag counts).
  virtual Dispatcher& ops() = 0;
};

struct LineOptions {
  int steps = 20;
  float guidance_scale = 2.0f;
  float shift = 1.0f;
  float start_sigma = 1.0f;  // < 1: start from the noised glyph line (LineSampleRequest::start_sigma)
  bool guide_glyph = false;  // LineSampleRequest::guide_glyph
  uint64_t seed = 0;
  OverflowPolicy overflow = OverflowPolicy::kError;
};

struct LineImage {
  std::string text;
  int64_t width = 0, height = 0;
  std::vector<uint8_t> gray;  // [height, width]
  WidthBucket bucket;
  std::vector<uint32_t> missing_glyphs;  // code points the font has no glyph for (drawn as .notdef boxes)
};

struct LineTimings {
  double render_ms = 0, style_ms = 0, sample_ms = 0;
  int lines = 0;
};

// The sampling defaults a model folder recommends in its sampler.json ({"start_sigma": s,
// "guidance_scale": g, "steps": n, "shift": k, "guide_glyph": b}, every key optional), over
// LineOptions' defaults.
// No file: the defaults. A malformed file or an out-of-range value: an error naming the file.
Result<LineOptions> line_options_for_model(const std::string& model_dir);
// The same from the file's text; `path` names it in messages.
Result<LineOptions> line_options_from_json(std::string_view text, const std::string& path);

// One row of a batched generation (the server's unit): its text, its style embedding [style_dim]
// (null or empty: unconditional) and the seed of its own noise.
struct LineRowInput {
  std::string text;
  const std::vector<float>* style = nullptr;
  uint64_t seed = 0;
};

class LinePipeline {
 public:
  // `model_dir`: config.json + model.safetensors of the line model (+ style_encoder/ optional).
  // `weights` other than f32: the weights quantized in memory to that type (quant::quantize_in_memory).
  static Result<std::unique_ptr<LinePipeline>> open(const std::string& model_dir, const std::string& font_path,
                                                    ThreadPool& pool, DType weights = DType::kF32);

  // Renders `texts` in the style of `style_path` (empty: no style, unconditional). Lines are
  // grouped by width bucket and sampled up to `max_batch` at a time, so each bucket's plan is
  // built once. Results are in input order.
  Result<std::vector<LineImage>> generate(const std::vector<std::string>& texts, const std::string& style_path,
                                          const LineOptions& options, int max_batch = 8, LineTimings* timings = nullptr,
                                          const std::function<void(int done, int total)>& on_line = nullptr);
  // The same from a style embedding [style_dim] (empty: unconditional); `control` sees every
  // sampling step and can cancel between steps.
  Result<std::vector<LineImage>> generate_with_embedding(const std::vector<std::string>& texts,
                                                         const std::vector<float>& style, const LineOptions& options,
                                                         int max_batch, LineTimings* timings,
                                                         const std::function<void(int done, int total)>& on_line,
                                                         const StepControl& control = {});

  // Rows sampled together, one batch per width bucket (or one ragged batch, below). Row i's
  // noise comes from rows[i].seed alone (seeded as a one-line generate() with that seed), so its
  // image does not depend on the rows batched with it. Guidance applies when some row has a style
  // (a row without one is exact under it: its conditional and unconditional inputs are equal).
  // `plan_batch` > 0: every batch runs in the plan of plan_batch lines (x2 for guidance), so all
  // batch sizes of a width share one plan; options.seed is not used. `ragged`: all rows in ONE
  // batch at the widest row's width, narrower rows padded and masked out of attention (their
  // pixels then match their solo run to float rounding, not bit for bit); `pad_to` > 0 (latent
  // columns): the batch is at least that wide, so a server keeps a few plan widths.
  Result<std::vector<LineImage>> generate_rows(const std::vector<LineRowInput>& rows, const LineOptions& options,
                                               int64_t plan_batch, const StepControl& control = {},
                                               bool ragged = false, int64_t pad_to = 0);
  // The bucket `text` falls in (renders the glyph line).
  Result<WidthBucket> bucket_for(const std::string& text, OverflowPolicy overflow);
  // Builds the plans generate_rows(plan_batch) uses for these canvas widths.
  Status warm_up(const std::vector<int64_t>& canvas_widths, int64_t plan_batch);

  LineEngine& engine() { return *engine_; }
  GlyphLineRenderer& renderer() { return *renderer_; }
  void set_style_encoder(std::unique_ptr<StyleEncoder> enc) { style_ = std::move(enc); }
  StyleEncoder* style_encoder() { return style_.get(); }

 private:
  std::unique_ptr<LineEngine> engine_;
  std::unique_ptr<GlyphLineRenderer> renderer_;
  std::unique_ptr<StyleEncoder> style_;
};

}  // namespace quill
