// quill._quill.ImageGenerator: include/quill/quill.h's ImageGenerator for Python (SD3, FLUX.2).
// python/quill/image_pipeline.py composes these pieces the way `quill generate` does.
#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <memory>
#include <string>
#include <vector>

#include "arrays.h"
#include "errors.h"
#include "quill/quill.h"
#include "step_callbacks.h"

namespace quill::py {
namespace nb = nanobind;
namespace {

using Conditioning = ImageGenerator::Conditioning;
using FloatArray = nb::ndarray<const float, nb::c_contig, nb::device::cpu>;

FloatArray as_floats(nb::handle h, const char* what) {
  FloatArray a;
  if (!nb::try_cast(h, a, /*convert=*/true))
    raise(invalid_argument(what, " must be a float32 numpy array (or convertible to one)"));
  return a;
}

std::vector<float> copy_floats(const FloatArray& a) { return {a.data(), a.data() + a.size()}; }

// Conditioning from arrays: embeds [B, T, J], pooled [B, P] or None.
Conditioning make_conditioning(nb::handle embeds, nb::handle pooled) {
  const FloatArray e = as_floats(embeds, "prompt_embeds");
  if (e.ndim() != 3) raise(invalid_argument("prompt_embeds must be [B, T, J], got ", e.ndim(), " dimensions"));
  Conditioning c;
  c.batch = int64_t(e.shape(0));
  c.text_len = int64_t(e.shape(1));
  c.encoder_hidden_states = copy_floats(e);
  if (!pooled.is_none()) {
    const FloatArray p = as_floats(pooled, "pooled_projections");
    if (p.ndim() != 2 || int64_t(p.shape(0)) != c.batch)
      raise(invalid_argument("pooled_projections must be [B, P] with B = ", c.batch, " (prompt_embeds' batch)"));
    c.pooled_projections = copy_floats(p);
  }
  return c;
}

nb::dict info_dict(const ImageGenerator::Info& i) {
  nb::dict d;
  d["architecture"] = i.architecture;
  d["in_channels"] = i.in_channels;
  d["joint_attention_dim"] = i.joint_attention_dim;
  d["pooled_projection_dim"] = i.pooled_projection_dim;
  d["vae_scale"] = i.vae_scale;
  d["patch_size"] = i.patch_size;
  d["latent_scale"] = i.latent_scale;
  d["default_size"] = i.default_size;
  d["default_steps"] = i.default_steps;
  d["default_guidance"] = i.default_guidance;
  d["guidance_distilled"] = i.guidance_distilled;
  d["takes_prompts"] = i.takes_prompts;
  d["defaults_source"] = i.defaults_source;
  d["device"] = i.device;
  return d;
}

class PyImageGenerator {
 public:
  PyImageGenerator(const std::string& transformer, const std::string& vae, const std::string& text_encoder,
                   const std::string& tokenizer, const std::string& device, int threads) {
    ImageGenerator::OpenOptions o;
    o.transformer = transformer;
    o.vae = vae;
    o.text_encoder = text_encoder;
    o.tokenizer = tokenizer;
    o.threads = threads;
    o.device = unwrap(parse_device_choice(device));
    gen_ = call_without_gil([&] { return ImageGenerator::open(o); });
  }

  ImageGenerator& gen() { return *gen_; }

  Conditioning encode_prompts(const std::vector<std::string>& prompts) {
    return call_without_gil([&] { return gen_->encode_prompts(prompts); });
  }

  // Images [B, H, W, 3] uint8.
  nb::ndarray<nb::numpy, uint8_t> generate(const Conditioning& cond, const Conditioning* negative, int64_t width,
                                           int64_t height, int steps, float cfg, double shift, uint64_t seed,
                                           bool tiled, nb::handle latents, nb::object progress, CancelToken* cancel) {
    ImageGenerator::Options o;
    o.width = width;
    o.height = height;
    o.steps = steps;
    o.guidance_scale = cfg;
    o.shift = shift;
    o.seed = seed;
    o.tiled_decode = tiled;
    if (!latents.is_none()) o.initial_latents = copy_floats(as_floats(latents, "latents"));
    StepGuard guard(std::move(progress), cancel);
    o.cancel = guard.cancel_flag();
    o.on_step = [&guard](int step, int steps_total) {
      guard.on_step([&] { return nb::make_tuple(step, steps_total); });
    };
    Result<ImageGenerator::Output> r = [&] {
      nb::gil_scoped_release release;
      return gen_->generate(cond, negative, o);
    }();
    guard.rethrow_if_error();
    ImageGenerator::Output out = unwrap(std::move(r));
    const size_t b = out.rgb.size(), h = size_t(out.height), w = size_t(out.width), plane = h * w * 3;
    std::vector<uint8_t> all;
    all.reserve(b * plane);
    for (auto& img : out.rgb) all.insert(all.end(), img.begin(), img.end());
    return to_numpy(std::move(all), {b, h, w, size_t(3)});
  }

 private:
  std::unique_ptr<ImageGenerator> gen_;
};

}  // namespace

void bind_image_generator(nb::module_& m) {
  nb::class_<Conditioning>(m, "Conditioning", "Text conditioning for ImageGenerator: prompt embeddings (+ SD3's pooled vector).")
      .def(
          "__init__",
          [](Conditioning* self, nb::handle embeds, nb::handle pooled) {
            new (self) Conditioning(make_conditioning(embeds, pooled));
          },
          nb::arg("prompt_embeds"), nb::arg("pooled_projections").none() = nb::none())
      .def_ro("batch", &Conditioning::batch)
      .def_ro("text_len", &Conditioning::text_len)
      .def_prop_ro("prompt_embeds",
                   [](const Conditioning& c) {
                     const size_t t = size_t(c.text_len), b = size_t(c.batch);
                     const size_t j = b * t ? c.encoder_hidden_states.size() / (b * t) : 0;
                     std::vector<float> v = c.encoder_hidden_states;
                     return to_numpy(std::move(v), {b, t, j});
                   },
                   nb::rv_policy::move)
      .def_prop_ro("pooled_projections", [](const Conditioning& c) -> nb::object {
        if (c.pooled_projections.empty()) return nb::none();
        const size_t b = size_t(c.batch);
        std::vector<float> v = c.pooled_projections;
        return nb::cast(to_numpy(std::move(v), {b, v.size() / b}), nb::rv_policy::move);
      });

  m.def(
      "read_conditioning",
      [](PyImageGenerator& g, const std::string& path, bool negative) {
        return unwrap(read_conditioning_file(path, g.gen().info(), negative));
      },
      nb::arg("generator"), nb::arg("path"), nb::arg("negative") = false);
  m.def("conditioning_file_has_negative", &conditioning_file_has_negative, nb::arg("path"));
  m.def(
      "read_latents",
      [](const std::string& path, const std::vector<int64_t>& shape) {
        std::vector<float> v = unwrap(read_latents_file(path, shape));
        auto a = to_numpy(std::move(v), {size_t(shape.at(0)), size_t(shape.at(1)), size_t(shape.at(2)), size_t(shape.at(3))});
        return a;
      },
      nb::arg("path"), nb::arg("shape"));

  nb::class_<PyImageGenerator>(m, "ImageGenerator", "The engine behind quill.ImagePipeline (see python/quill/image_pipeline.py).")
      .def(nb::init<const std::string&, const std::string&, const std::string&, const std::string&, const std::string&,
                    int>(),
           nb::arg("transformer"), nb::arg("vae"), nb::arg("text_encoder"), nb::arg("tokenizer"), nb::arg("device"),
           nb::arg("threads"))
      .def_prop_ro("info", [](PyImageGenerator& g) { return info_dict(g.gen().info()); })
      .def("op_counts", [](PyImageGenerator& g) { return g.gen().op_counts(); })
      .def("encode_prompts", &PyImageGenerator::encode_prompts, nb::arg("prompts"))
      .def("generate", &PyImageGenerator::generate, nb::arg("cond"), nb::arg("negative").none(), nb::arg("width"),
           nb::arg("height"), nb::arg("steps"), nb::arg("cfg"), nb::arg("shift"), nb::arg("seed"), nb::arg("tiled"),
           nb::arg("latents").none(), nb::arg("progress").none(), nb::arg("cancel").none(),
           "Images as uint8 [B, H, W, 3]; progress(step, steps).");
}

}  // namespace quill::py
