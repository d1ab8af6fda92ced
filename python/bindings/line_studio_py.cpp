// quill._quill.LineStudio: include/quill/line_studio.h for Python. The friendly signatures (PIL,
// path-likes, warnings for missing glyphs) live in python/quill/line_studio.py; this layer
// converts values, releases the GIL around the engine and turns Status into exceptions.
#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/shared_ptr.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/unique_ptr.h>
#include <nanobind/stl/vector.h>

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "arrays.h"
#include "errors.h"
#include "quill/line_studio.h"
#include "step_callbacks.h"

namespace quill::py {
namespace nb = nanobind;
namespace {

using StyleArray = nb::ndarray<const uint8_t, nb::c_contig, nb::device::cpu>;

// A style as the engine takes it: "default", None, a path, or uint8 pixels [H, W] / [H, W, C]
// read in place (`keep` holds a converted copy when the array was not C-contiguous uint8).
LineStyle to_style(nb::handle style, std::optional<StyleArray>* keep) {
  if (style.is_none()) return LineStyle::none();
  if (nb::isinstance<nb::str>(style)) {
    std::string s = nb::cast<std::string>(style);
    if (s == "default") return LineStyle::model_default();
    return LineStyle::file(std::move(s));
  }
  StyleArray a;
  if (!nb::try_cast(style, a, /*convert=*/true))
    raise(invalid_argument("style must be \"default\", None, a file path, a uint8 numpy array [H, W] or [H, W, C] "
                           "or a PIL image; got ",
                           nb::cast<std::string>(nb::str(style.type()))));
  if (a.ndim() != 2 && a.ndim() != 3)
    raise(invalid_argument("style array must be [H, W] or [H, W, C], got ", a.ndim(), " dimensions"));
  const int64_t c = a.ndim() == 3 ? int64_t(a.shape(2)) : 1;
  if (c < 1 || c > 4) raise(invalid_argument("style array has ", c, " channels (expected 1, 2, 3 or 4)"));
  keep->emplace(a);
  return LineStyle::view(a.data(), int(a.shape(1)), int(a.shape(0)), int(c));
}

struct Sampling {
  std::optional<int> steps;
  std::optional<float> cfg, shift, start_sigma;
};

std::optional<LineSampling> to_sampling(const LineStudio& studio, const Sampling& s) {
  if (!s.steps && !s.cfg && !s.shift && !s.start_sigma) return std::nullopt;
  LineSampling out = studio.defaults();
  if (s.steps) out.steps = *s.steps;
  if (s.cfg) out.guidance_scale = *s.cfg;
  if (s.shift) out.shift = *s.shift;
  if (s.start_sigma) out.start_sigma = *s.start_sigma;
  return out;
}

// (gray [H, W] uint8, missing glyph code points) per line.
nb::list to_python(std::vector<LineResult>&& lines) {
  nb::list out;
  for (LineResult& l : lines) {
    const size_t h = size_t(l.height), w = size_t(l.width);
    out.append(nb::make_tuple(to_numpy(std::move(l.gray), {h, w}), nb::cast(l.missing_glyphs)));
  }
  return out;
}

struct PyStyleEmbedding {
  StyleEmbedding embedding;
};

class PyLineStudio {
 public:
  PyLineStudio(const std::string& model_dir, const std::string& device, int threads, const std::string& font,
               const std::string& weights) {
    LineStudioOptions o;
    o.model_dir = model_dir;
    o.weights = weights;
    o.font_path = font;
    o.threads = threads;
    o.device = unwrap(parse_device_choice(device));
    studio_ = call_without_gil([&] { return LineStudio::open(o); });
  }

  LineStudio& studio() { return *studio_; }
  const LineTiming& last_timing() const { return last_timing_; }

  nb::list generate(const std::vector<std::string>& texts, nb::handle style, uint64_t seed, const Sampling& sampling,
                    bool clamp_overflow, int max_batch, nb::object progress, CancelToken* cancel) {
    std::optional<StyleArray> keep;
    LineRequest req;
    req.texts = texts;
    req.style = to_style(style, &keep);
    req.sampling = to_sampling(*studio_, sampling);
    req.seed = seed;
    req.clamp_overflow = clamp_overflow;
    req.max_batch = max_batch;
    StepGuard guard(std::move(progress), cancel);
    req.cancel = guard.cancel_flag();
    req.on_progress = [&guard](const LineProgress& p) {
      guard.on_step([&] { return nb::make_tuple(p.lines_done, p.lines_total, p.step, p.steps); });
    };
    Result<std::vector<LineResult>> r = [&] {
      nb::gil_scoped_release release;
      return studio_->generate(req, &last_timing_);
    }();
    guard.rethrow_if_error();
    return to_python(unwrap(std::move(r)));
  }

  PyStyleEmbedding embed_style(nb::handle style) {
    std::optional<StyleArray> keep;
    const LineStyle s = to_style(style, &keep);
    return {call_without_gil([&] { return studio_->embed_style(s); })};
  }

  nb::list generate_rows(const std::vector<std::tuple<std::string, std::optional<PyStyleEmbedding*>, uint64_t>>& rows,
                         const Sampling& sampling, bool clamp_overflow, int plan_batch, bool ragged,
                         int64_t pad_to_width, nb::object progress, CancelToken* cancel) {
    LineRowsRequest req;
    req.rows.reserve(rows.size());
    for (const auto& [text, style, seed] : rows)
      req.rows.push_back({text, style && *style ? (*style)->embedding : nullptr, seed});
    req.sampling = to_sampling(*studio_, sampling);
    req.clamp_overflow = clamp_overflow;
    req.plan_batch = plan_batch;
    req.ragged = ragged;
    req.pad_to_width = pad_to_width;
    StepGuard guard(std::move(progress), cancel);
    req.cancel = guard.cancel_flag();
    req.on_step = [&guard](int step, int steps) { guard.on_step([&] { return nb::make_tuple(step, steps); }); };
    Result<std::vector<LineResult>> r = [&] {
      nb::gil_scoped_release release;
      return studio_->generate_rows(req);
    }();
    guard.rethrow_if_error();
    return to_python(unwrap(std::move(r)));
  }

  int64_t bucket_width(const std::string& text, bool clamp_overflow) {
    return unwrap(studio_->bucket_width(text, clamp_overflow));
  }

  void warm_up(const std::vector<int64_t>& widths, int plan_batch) {
    Status st;
    {
      nb::gil_scoped_release release;
      st = studio_->warm_up(widths, plan_batch);
    }
    check(st);
  }

 private:
  std::unique_ptr<LineStudio> studio_;
  LineTiming last_timing_;
};

}  // namespace

void bind_cancel_token(nb::module_& m) {
  nb::class_<CancelToken>(m, "CancelToken",
                          "Cancels a running generate call from another thread: token.cancel(); the call raises "
                          "quill.Cancelled at its next step.")
      .def(nb::init<>())
      .def("cancel", [](CancelToken& t) { t.flag.store(true); }, "Ask the call using this token to stop.")
      .def("reset", [](CancelToken& t) { t.flag.store(false); }, "Make the token usable again.")
      .def_prop_ro("cancelled", [](const CancelToken& t) { return t.flag.load(); });
}

void bind_line_studio(nb::module_& m) {
  nb::class_<PyStyleEmbedding>(m, "StyleEmbedding",
                               "A style reference embedded once (LineStudio.embed_style), reusable for many lines.")
      .def("__len__", [](const PyStyleEmbedding& e) { return e.embedding ? e.embedding->size() : size_t(0); })
      .def_prop_ro("is_unconditional",
                   [](const PyStyleEmbedding& e) { return !e.embedding || e.embedding->empty(); });

  nb::class_<PyLineStudio>(m, "LineStudio", "The engine behind quill.LineStudio (see python/quill/line_studio.py).")
      .def(nb::init<const std::string&, const std::string&, int, const std::string&, const std::string&>(),
           nb::arg("model_dir"), nb::arg("device"), nb::arg("threads"), nb::arg("font"), nb::arg("weights"))
      .def_prop_ro("model_dir", [](PyLineStudio& s) { return s.studio().model_dir(); })
      .def_prop_ro("device", [](PyLineStudio& s) { return s.studio().device(); })
      .def_prop_ro("line_height", [](PyLineStudio& s) { return s.studio().line_height(); })
      .def_prop_ro("max_line_width", [](PyLineStudio& s) { return s.studio().max_line_width(); })
      .def_prop_ro("has_style_encoder", [](PyLineStudio& s) { return s.studio().has_style_encoder(); })
      .def_prop_ro("default_style_path", [](PyLineStudio& s) { return s.studio().default_style_path(); })
      .def_prop_ro("defaults",
                   [](PyLineStudio& s) {
                     const LineSampling& d = s.studio().defaults();
                     nb::dict out;
                     out["steps"] = d.steps;
                     out["cfg"] = d.guidance_scale;
                     out["shift"] = d.shift;
                     out["start_sigma"] = d.start_sigma;
                     out["guide_glyph"] = d.guide_glyph;
                     return out;
                   })
      .def_prop_ro("plan_builds", [](PyLineStudio& s) { return s.studio().plan_builds(); })
      .def_prop_ro("plan_reuses", [](PyLineStudio& s) { return s.studio().plan_reuses(); })
      .def_prop_ro("last_timing",
                   [](PyLineStudio& s) {
                     const LineTiming& t = s.last_timing();
                     nb::dict out;
                     out["style_ms"] = t.style_ms;
                     out["render_ms"] = t.render_ms;
                     out["sample_ms"] = t.sample_ms;
                     out["lines"] = t.lines;
                     return out;
                   })
      .def_prop_ro("op_fallbacks", [](PyLineStudio& s) { return s.studio().op_fallbacks(); })
      .def("op_counts", [](PyLineStudio& s) { return s.studio().op_counts(); })
      .def(
          "generate",
          [](PyLineStudio& s, const std::vector<std::string>& texts, nb::handle style, uint64_t seed,
             std::optional<int> steps, std::optional<float> cfg, std::optional<float> shift,
             std::optional<float> start_sigma, bool clamp_overflow, int max_batch, nb::object progress,
             CancelToken* cancel) {
            return s.generate(texts, style, seed, {steps, cfg, shift, start_sigma}, clamp_overflow, max_batch,
                              std::move(progress), cancel);
          },
          nb::arg("texts"), nb::arg("style").none(), nb::arg("seed"), nb::arg("steps").none(), nb::arg("cfg").none(),
          nb::arg("shift").none(), nb::arg("start_sigma").none(), nb::arg("clamp_overflow"), nb::arg("max_batch"),
          nb::arg("progress").none(), nb::arg("cancel").none(),
          "Lines as (gray uint8 [H, W], missing glyph code points); progress(lines_done, lines_total, step, steps).")
      .def("embed_style", &PyLineStudio::embed_style, nb::arg("style").none())
      .def(
          "generate_rows",
          [](PyLineStudio& s, const std::vector<std::tuple<std::string, std::optional<PyStyleEmbedding*>, uint64_t>>& rows,
             std::optional<int> steps, std::optional<float> cfg, std::optional<float> shift,
             std::optional<float> start_sigma, bool clamp_overflow, int plan_batch, bool ragged, int64_t pad_to_width,
             nb::object progress, CancelToken* cancel) {
            return s.generate_rows(rows, {steps, cfg, shift, start_sigma}, clamp_overflow, plan_batch, ragged,
                                   pad_to_width, std::move(progress), cancel);
          },
          nb::arg("rows"), nb::arg("steps").none(), nb::arg("cfg").none(), nb::arg("shift").none(),
          nb::arg("start_sigma").none(), nb::arg("clamp_overflow"), nb::arg("plan_batch"), nb::arg("ragged"),
          nb::arg("pad_to_width"), nb::arg("progress").none(), nb::arg("cancel").none(),
          "Rows (text, StyleEmbedding or None, seed) as one batch; progress(step, steps).")
      .def("bucket_width", &PyLineStudio::bucket_width, nb::arg("text"), nb::arg("clamp_overflow"))
      .def("bucket_widths", [](PyLineStudio& s) { return s.studio().bucket_widths(); })
      .def("warm_up", &PyLineStudio::warm_up, nb::arg("widths"), nb::arg("plan_batch"));
}

}  // namespace quill::py
