// The extension module quill._quill; python/quill/ wraps it in the package's public API.
#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/string.h>

#include <string>

#include "errors.h"
#include "quill/model_info.h"
#include "quill/quill.h"

namespace quill::py {
namespace nb = nanobind;
void bind_cancel_token(nb::module_& m);
void bind_line_studio(nb::module_& m);
void bind_image_generator(nb::module_& m);
}  // namespace quill::py

NB_MODULE(_quill, m) {
  namespace nb = nanobind;
  using namespace quill::py;
  m.doc() = "Quill's C++ engine (use the `quill` package, not this module).";
  register_errors(m);
  m.attr("__version__") = quill::version();
  m.def(
      "describe_model_json",
      [](const std::string& path, bool tensors) {
        return call_without_gil([&] { return quill::describe_model_json(path, tensors); });
      },
      nb::arg("path"), nb::arg("tensors") = false, "What `quill info --json` prints for `path`.");
  m.def(
      "encode_png",
      [](nb::ndarray<const uint8_t, nb::c_contig, nb::device::cpu> a) {
        if (a.ndim() != 2 && a.ndim() != 3)
          raise(quill::invalid_argument("encode_png takes uint8 [H, W] or [H, W, C], got ", a.ndim(), " dimensions"));
        const int64_t c = a.ndim() == 3 ? int64_t(a.shape(2)) : 1;
        if (a.shape(0) > size_t(1) << 20 || a.shape(1) > size_t(1) << 20)
          raise(quill::invalid_argument("encode_png: image of ", a.shape(1), "x", a.shape(0), " is too large"));
        std::vector<uint8_t> png = call_without_gil([&] { return quill::encode_png(a.data(), int(a.shape(1)), int(a.shape(0)), int(c)); });
        return nb::bytes(reinterpret_cast<const char*>(png.data()), png.size());
      },
      nb::arg("image"), "PNG bytes of a uint8 image [H, W] (gray) or [H, W, C] (C = 1..4).");
  m.def("default_line_model_dir", &quill::default_line_model_dir);
  bind_cancel_token(m);
  bind_line_studio(m);
  bind_image_generator(m);
}
