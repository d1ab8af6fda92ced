// Loading helpers shared by the model files: big Linear weights stay as zero-copy views in their
// stored dtype (the kernels read them in place); small tensors (biases, norm weights, position
// tables) are converted to f32 once at load, which costs O(dim) memory.
#pragma once

#include <string>
#include <vector>

#include "io/model_files.h"
#include "quill/status.h"
#include "quill/tensor.h"

namespace quill {

struct Linear {
  Tensor weight;            // [out, in], stored dtype (f32/f16/bf16/quantized), viewing the file
  std::vector<float> bias;  // [out] f32, empty when the layer has none
  int64_t in = 0, out = 0;
  const float* bias_ptr() const { return bias.empty() ? nullptr : bias.data(); }
};

// Reads `<prefix>.weight` [out, in] (and `<prefix>.bias` [out] when `bias`); a conv weight
// [out, c, kh, kw] is accepted as [out, c*kh*kw] when `flatten_conv`.
Result<Linear> load_linear(const ModelFiles& files, const std::string& prefix, int64_t in, int64_t out, bool bias,
                           bool flatten_conv = false);

// Rows [begin, end) of a 2-D weight [N, K] as a zero-copy view, for any dtype (quantized rows
// are whole blocks): a fused projection's parts as separate Linears.
Result<Tensor> weight_rows(const Tensor& w, int64_t begin, int64_t end);

// Reads any float tensor of the given shape as f32.
Result<std::vector<float>> load_f32(const ModelFiles& files, const std::string& name, const Shape& shape);

// Config accessors with errors that name the key and the model file.
Result<int64_t> config_int(const ModelFiles& files, const std::string& key);
int64_t config_int_or(const ModelFiles& files, const std::string& key, int64_t fallback);
double config_float_or(const ModelFiles& files, const std::string& key, double fallback);

}  // namespace quill
