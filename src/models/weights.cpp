#include "models/weights.h"

namespace quill {

Result<Tensor> weight_rows(const Tensor& w, int64_t begin, int64_t end) {
  if (w.rank() != 2 || begin < 0 || begin > end || end > w.dim(0) || !w.is_contiguous())
    return invalid_argument("rows [", begin, ", ", end, ") of ", w.describe());
  const auto row_bytes = dtype_bytes_for(w.dtype(), w.dim(1));
  if (!row_bytes) return invalid_argument("rows of ", w.describe(), ": the row length does not fit its blocks");
  Tensor t(static_cast<uint8_t*>(w.data()) + begin * *row_bytes, w.dtype(), Shape{end - begin, w.dim(1)}, w.device(),
           w.owner());
  if (const float* s = w.row_scale())
    t = t.with_row_scale(std::make_shared<const std::vector<float>>(s + begin, s + end));
  return t;
}

Result<Linear> load_linear(const ModelFiles& files, const std::string& prefix, int64_t in, int64_t out, bool bias,
                           bool flatten_conv) {
  Linear l;
  l.in = in;
  l.out = out;
  QUILL_ASSIGN_OR_RETURN(Tensor w, files.get(prefix + ".weight"));
  if (flatten_conv && w.rank() == 4) {
    if (w.dim(0) * w.dim(1) * w.dim(2) * w.dim(3) != out * in || w.dim(0) != out)
      return invalid_file("conv weight shape mismatch")
          .with_tensor(prefix + ".weight")
          .with_file(files.path())
          .with_expected_found(str_cat("[", out, ", ", in, "] as conv"), w.shape().to_string());
    w = w.reshape({out, in});
  }
  if (w.shape() != Shape({out, in}))
    return invalid_file("weight shape mismatch")
        .with_tensor(prefix + ".weight")
        .with_file(files.path())
        .with_expected_found(Shape({out, in}).to_string(), w.shape().to_string());
  if (w.dtype() == DType::kF8E4M3) {
    // fp8 e4m3 weights carry one f32 scale per output row in "<prefix>.weight_scale" [out].
    QUILL_ASSIGN_OR_RETURN(std::vector<float> scale, load_f32(files, prefix + ".weight_scale", {out}));
    w = w.with_row_scale(std::make_shared<const std::vector<float>>(std::move(scale)));
  }
  l.weight = w;
  if (bias) {
    QUILL_ASSIGN_OR_RETURN(l.bias, load_f32(files, prefix + ".bias", {out}));
  }
  return l;
}

Result<std::vector<float>> load_f32(const ModelFiles& files, const std::string& name, const Shape& shape) {
  QUILL_ASSIGN_OR_RETURN(Tensor t, files.get(name));
  if (t.numel() != shape.numel() || (t.shape() != shape && t.rank() == shape.rank()))
    return invalid_file("shape mismatch")
        .with_tensor(name)
        .with_file(files.path())
        .with_expected_found(shape.to_string(), t.shape().to_string());
  if (!dtype_traits(t.dtype()).is_float)
    return invalid_file("expected a float tensor, found ", dtype_name(t.dtype()))
        .with_tensor(name)
        .with_file(files.path());
  std::vector<float> v(static_cast<size_t>(t.numel()));
  if (!convert_to_f32(t.dtype(), t.data(), v.data(), t.numel()))
    return unsupported("cannot convert ", dtype_name(t.dtype()), " to f32").with_tensor(name);
  return v;
}

Result<int64_t> config_int(const ModelFiles& files, const std::string& key) {
  const auto& c = files.config();
  auto it = c.find(key);
  if (it == c.end() || !it->is_number_integer())
    return invalid_file("config key '", key, "' missing or not an integer").with_file(files.path());
  return it->get<int64_t>();
}

int64_t config_int_or(const ModelFiles& files, const std::string& key, int64_t fallback) {
  const auto& c = files.config();
  auto it = c.find(key);
  return (it != c.end() && it->is_number_integer()) ? it->get<int64_t>() : fallback;
}

double config_float_or(const ModelFiles& files, const std::string& key, double fallback) {
  const auto& c = files.config();
  auto it = c.find(key);
  return (it != c.end() && it->is_number()) ? it->get<double>() : fallback;
}

}  // namespace quill
