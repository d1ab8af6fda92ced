#include "pipeline/line_pipeline.h"
#include "core/input_files.h"

#include <chrono>
#include <filesystem>
#include <map>
#include <set>
#include <type_traits>

#include <nlohmann/json.hpp>

#include "core/mapped_file.h"
#include "io/json_util.h"
#include "pipeline/line_sampler.h"
#include "quant/quantize_model.h"
#include "quill/line_studio.h"

namespace quill {

Result<LineOptions> line_options_for_model(const std::string& model_dir) {
  const std::string path = model_dir + "/sampler.json";
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) return LineOptions{};
  note_input_file(path);
  QUILL_ASSIGN_OR_RETURN(auto file, MappedFile::open(path));
  return line_options_from_json(std::string_view(reinterpret_cast<const char*>(file->data()), size_t(file->size())),
                                path);
}

Result<LineOptions> line_options_from_json(std::string_view text, const std::string& path) {
  LineOptions o;
  auto parsed = parse_json_checked(text, "sampler.json");
  if (!parsed) return parsed.take_status().with_file(path);
  const nlohmann::json& j = *parsed;
  if (!j.is_object())
    return invalid_file("sampler.json must be a JSON object").with_file(path).with_expected_found("object",
                                                                                                   j.type_name());
  // A misspelt key would otherwise be ignored and its default used without a word.
  static const std::set<std::string> known = {"start_sigma", "guidance_scale", "shift", "steps", "guide_glyph"};
  for (const auto& [key, value] : j.items())
    if (!known.count(key))
      return invalid_file("sampler.json has an unknown key '", key,
                          "' (known: start_sigma, guidance_scale, shift, steps, guide_glyph)")
          .with_file(path);
  auto number = [&](const char* key, SettingRange r, auto* field) -> Status {
    auto it = j.find(key);
    if (it == j.end()) return Status::ok();
    if (!it->is_number() || !(it->get<double>() >= r.lo && it->get<double>() <= r.hi))
      return invalid_file("sampler.json '", key, "' must be a number in [", r.lo, ", ", r.hi, "]")
          .with_file(path)
          .with_expected_found(str_cat("[", r.lo, ", ", r.hi, "]"), dump_json(*it));
    using Field = std::remove_pointer_t<decltype(field)>;
    if (std::is_integral_v<Field> && !it->is_number_integer())
      return invalid_file("sampler.json '", key, "' must be a whole number").with_file(path).with_expected_found(
          "integer", dump_json(*it));
    *field = static_cast<Field>(it->get<double>());
    return Status::ok();
  };
  QUILL_RETURN_IF_ERROR(number("start_sigma", kLineStartSigmaRange, &o.start_sigma));
  QUILL_RETURN_IF_ERROR(number("guidance_scale", kLineGuidanceRange, &o.guidance_scale));
  QUILL_RETURN_IF_ERROR(number("shift", kLineShiftRange, &o.shift));
  QUILL_RETURN_IF_ERROR(number("steps", kLineStepsRange, &o.steps));
  if (auto it = j.find("guide_glyph"); it != j.end()) {
    if (!it->is_boolean())
      return invalid_file("sampler.json 'guide_glyph' must be true or false").with_file(path).with_expected_found(
          "boolean", dump_json(*it));
    o.guide_glyph = it->get<bool>();
  }
  return o;
}

namespace {
// The one rule both generation paths follow, so a row's line does not depend on its batch: without
// a style there is nothing to guide, unless the guidance is on the text too.
float guidance_for(const LineOptions& o, bool has_style) {
  return has_style || o.guide_glyph ? o.guidance_scale : 1.0f;
}

double ms_since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t).count();
}
}  // namespace

Result<std::unique_ptr<LinePipeline>> LinePipeline::open(const std::string& model_dir, const std::string& font_path,
                                                         ThreadPool& pool, DType weights) {
  auto p = std::make_unique<LinePipeline>();
  if (weights == DType::kF32) {
    QUILL_ASSIGN_OR_RETURN(p->engine_, open_line_engine(model_dir, pool));
  } else {
    QUILL_ASSIGN_OR_RETURN(auto files, ModelFiles::open(model_dir));
    QUILL_ASSIGN_OR_RETURN(auto quantized, quant::quantize_in_memory(*files, weights));
    QUILL_ASSIGN_OR_RETURN(auto model, LineModel::load(quantized));
    p->engine_ = std::make_unique<LineEngine>(std::move(model), pool);
  }
  const LineModelConfig& c = p->engine_->model().config();
  if (c.in_channels != c.out_channels || c.glyph_channels != 1 || c.downscale != 1)
    return unsupported(
               "this line pipeline samples in pixel space with one glyph channel (in_channels == out_channels, "
               "glyph_channels 1, downscale 1); the model config asks for in ",
               c.in_channels, ", out ", c.out_channels, ", glyph ", c.glyph_channels, ", downscale ", c.downscale)
        .with_file(model_dir);
  QUILL_ASSIGN_OR_RETURN(p->renderer_, GlyphLineRenderer::create(font_path));
  return p;
}

Result<std::vector<LineImage>> LinePipeline::generate(const std::vector<std::string>& texts,
                                                      const std::string& style_path, const LineOptions& o,
                                                      int max_batch, LineTimings* timings,
                                                      const std::function<void(int, int)>& on_line) {
  std::vector<float> style;
  double style_ms = 0;
  if (!style_path.empty()) {
    if (!style_)
      return unsupported("this model has no style encoder (no style_encoder/ folder), so --style cannot be used");
    const auto t0 = std::chrono::steady_clock::now();
    QUILL_ASSIGN_OR_RETURN(style, style_->embed(style_path));
    style_ms = ms_since(t0);
  }
  auto r = generate_with_embedding(texts, style, o, max_batch, timings, on_line);
  if (timings) timings->style_ms = style_ms;
  return r;
}

Result<std::vector<LineImage>> LinePipeline::generate_with_embedding(
    const std::vector<std::string>& texts, const std::vector<float>& style, const LineOptions& o, int max_batch,
    LineTimings* timings, const std::function<void(int, int)>& on_line, const StepControl& control) {
  const LineModelConfig& c = engine_->model().config();
  LineTimings t;
  if (texts.empty()) return invalid_argument("no lines to render");
  if (max_batch < 1) return invalid_argument("max batch must be positive");
  if (!style.empty() && int64_t(style.size()) != c.style_dim)
    return internal_error("style encoder returned ", style.size(), " values, the model expects ", c.style_dim);

  // Render every line, then group by bucket.
  std::vector<GlyphLine> glyphs(texts.size());
  std::map<int64_t, std::vector<size_t>> by_width;
  const auto t_render = std::chrono::steady_clock::now();
  for (size_t i = 0; i < texts.size(); ++i) {
    auto g = renderer_->render(texts[i], c.line_height, c.max_line_width, c.downscale, c.patch_size, o.overflow);
    if (!g) return g.take_status().with_context(str_cat("line ", i + 1));
    glyphs[i] = std::move(g.value());
    by_width[glyphs[i].bucket.latent_width].push_back(i);
  }
  t.render_ms = ms_since(t_render);

  std::vector<LineImage> out(texts.size());
  const auto t_sample = std::chrono::steady_clock::now();
  int done = 0;
  const int64_t H = c.line_height;
  for (const auto& [width, idx] : by_width) {
    for (size_t start = 0; start < idx.size(); start += size_t(max_batch)) {
      const int64_t B = int64_t(std::min(idx.size() - start, size_t(max_batch)));
      std::vector<float> g(static_cast<size_t>(B * H * width)), s;
      for (int64_t b = 0; b < B; ++b)
        glyphs_to_model_input(glyphs[idx[start + size_t(b)]].gray.data(), H, width, 1, g.data() + b * H * width);
      if (!style.empty())
        for (int64_t b = 0; b < B; ++b) s.insert(s.end(), style.begin(), style.end());
      LineSampleRequest r;
      r.batch = B;
      r.latent_w = width;
      r.glyphs = g.data();
      r.style = s.empty() ? nullptr : s.data();
      r.guidance_scale = guidance_for(o, !s.empty());
      r.steps = o.steps;
      r.shift = o.shift;
      r.start_sigma = o.start_sigma;
      r.guide_glyph = o.guide_glyph;
      r.seed = o.seed + start * 7919 + uint64_t(width);
      // A request of several batches plans each width once, at the full batch; the last, smaller
      // batch of a width runs in that plan.
      if (texts.size() > size_t(max_batch)) r.plan_rows = (r.guidance_scale > 1.0f ? 2 : 1) * int64_t(max_batch);
      std::vector<float> x;
      QUILL_RETURN_IF_ERROR(line_sample(*engine_, r, &x, control));
      for (int64_t b = 0; b < B; ++b) {
        const size_t i = idx[start + size_t(b)];
        LineImage& li = out[i];
        li.text = texts[i];
        li.width = width;
        li.height = H;
        li.bucket = glyphs[i].bucket;
        li.missing_glyphs = glyphs[i].missing;
        li.gray.resize(static_cast<size_t>(H * width));
        line_output_to_gray(x.data() + b * H * width, H * width, li.gray.data());
        if (on_line) on_line(++done, int(texts.size()));
      }
    }
  }
  t.sample_ms = ms_since(t_sample);
  t.lines = int(texts.size());
  if (timings) *timings = t;
  return out;
}

Result<WidthBucket> LinePipeline::bucket_for(const std::string& text, OverflowPolicy overflow) {
  const LineModelConfig& c = engine_->model().config();
  QUILL_ASSIGN_OR_RETURN(int64_t natural, renderer_->measure(text, c.line_height));
  return width_bucket(natural, c.line_height, c.max_line_width, c.downscale, c.patch_size, overflow);
}

Status LinePipeline::warm_up(const std::vector<int64_t>& canvas_widths, int64_t plan_batch) {
  const LineModelConfig& c = engine_->model().config();
  if (plan_batch < 1) return invalid_argument("warm-up batch must be positive, got ", plan_batch);
  std::vector<LineBucket> buckets;
  for (int64_t w : canvas_widths) {
    if (w <= 0 || w % 16 || w > c.max_line_width)
      return invalid_argument("warm-up width ", w, " is not a canvas width of this model (multiples of 16 up to ",
                              c.max_line_width, ")");
    buckets.push_back({2 * plan_batch, w / c.downscale});
  }
  return engine_->warm_up(buckets, /*commit=*/true);
}

Result<std::vector<LineImage>> LinePipeline::generate_rows(const std::vector<LineRowInput>& rows, const LineOptions& o,
                                                           int64_t plan_batch, const StepControl& control,
                                                           bool ragged, int64_t pad_to) {
  const LineModelConfig& c = engine_->model().config();
  if (rows.empty()) return invalid_argument("no lines to render");
  std::vector<GlyphLine> glyphs(rows.size());
  std::map<int64_t, std::vector<size_t>> groups;  // batch width -> rows
  int64_t widest = 0;
  for (size_t i = 0; i < rows.size(); ++i) {
    if (rows[i].style && !rows[i].style->empty() && int64_t(rows[i].style->size()) != c.style_dim)
      return invalid_argument("line ", i + 1, ": style embedding has ", rows[i].style->size(),
                              " values, the model expects ", c.style_dim);
    auto g = renderer_->render(rows[i].text, c.line_height, c.max_line_width, c.downscale, c.patch_size, o.overflow);
    if (!g) return g.take_status().with_context(str_cat("line ", i + 1));
    glyphs[i] = std::move(g.value());
    widest = std::max(widest, glyphs[i].bucket.latent_width);
    if (!ragged) groups[glyphs[i].bucket.latent_width].push_back(i);
  }
  if (ragged) {
    if (pad_to > 0) {
      if (pad_to % c.patch_size || pad_to > c.max_line_width / c.downscale)
        return invalid_argument("pad width ", pad_to, " must be a multiple of ", c.patch_size, " up to ",
                                c.max_line_width / c.downscale);
      widest = std::max(widest, pad_to);
    }
    for (size_t i = 0; i < rows.size(); ++i) groups[widest].push_back(i);
  }
  std::vector<LineImage> out(rows.size());
  const int64_t H = c.line_height, S = c.style_dim;
  for (const auto& [width, idx] : groups) {
    const int64_t B = int64_t(idx.size());
    std::vector<float> g(static_cast<size_t>(B * H * width), -1.0f), style(static_cast<size_t>(B * S), 0.0f);
    std::vector<uint64_t> seeds(static_cast<size_t>(B));
    std::vector<int64_t> row_w(static_cast<size_t>(B));
    std::vector<float> row_input;
    bool any_style = false, padded = false;
    for (int64_t b = 0; b < B; ++b) {
      const LineRowInput& row = rows[idx[size_t(b)]];
      const GlyphLine& gl = glyphs[idx[size_t(b)]];
      const int64_t wb = gl.bucket.latent_width;
      row_input.resize(static_cast<size_t>(H * wb));
      glyphs_to_model_input(gl.gray.data(), H, wb, 1, row_input.data());
      for (int64_t y = 0; y < H; ++y)
        std::copy(row_input.begin() + y * wb, row_input.begin() + (y + 1) * wb, g.begin() + (b * H + y) * width);
      if (row.style && !row.style->empty()) {
        std::copy(row.style->begin(), row.style->end(), style.begin() + b * S);
        any_style = true;
      }
      seeds[size_t(b)] = row.seed + uint64_t(wb);  // generate()'s seed for a one-line request
      row_w[size_t(b)] = wb;
      padded = padded || wb != width;
    }
    LineSampleRequest r;
    r.batch = B;
    r.latent_w = width;
    r.glyphs = g.data();
    r.style = any_style ? style.data() : nullptr;
    r.guidance_scale = guidance_for(o, any_style);
    r.steps = o.steps;
    r.shift = o.shift;
    r.start_sigma = o.start_sigma;
    r.guide_glyph = o.guide_glyph;
    r.row_seeds = seeds.data();
    r.row_latent_w = padded ? row_w.data() : nullptr;
    if (plan_batch > 0) r.plan_rows = 2 * plan_batch;
    std::vector<float> x;
    QUILL_RETURN_IF_ERROR(line_sample(*engine_, r, &x, control));
    for (int64_t b = 0; b < B; ++b) {
      const size_t i = idx[size_t(b)];
      const int64_t wb = row_w[size_t(b)];
      LineImage& li = out[i];
      li.text = rows[i].text;
      li.width = wb;
      li.height = H;
      li.bucket = glyphs[i].bucket;
      li.missing_glyphs = glyphs[i].missing;
      li.gray.resize(static_cast<size_t>(H * wb));
      for (int64_t y = 0; y < H; ++y)
        line_output_to_gray(x.data() + (b * H + y) * width, wb, li.gray.data() + y * wb);
    }
  }
  return out;
}

}  // namespace quill
