// `quill quantize` as a library: which tensor of a model becomes which type (the plan), and the
// conversion of one tensor with its reconstruction error. The CLI (src/cli/cmd_quantize.cpp)
// writes the result as GGUF.
//
// Default policy for a target block type T (tq2_0_g128, q8_0), fp8_e4m3 (per-row scale) or half
// type (bf16, f16):
//   - 2-D `.weight` tensors inside the transformer blocks (names containing
//     "transformer_blocks.<i>.", "single_transformer_blocks.<i>.", BFL "double_blocks.<i>." /
//     "single_blocks.<i>.") become T; when their input
//     dimension K is not a multiple of T's block they become bf16 instead (the reason says so);
//   - every other tensor of rank >= 2 (patch/position/time/text embeddings, the final norm_out
//     and proj_out) becomes bf16: they are small, run once per token, and dominate the error
//     when quantized;
//   - 1-D tensors (biases, norm scales) and non-float tensors are copied unchanged (f32 stays f32).
// Rules ("REGEX=TYPE", first match wins, std::regex_search on the name) override the default for
// tensors of rank >= 2; TYPE may also be "keep" (unchanged).
#pragma once

#include <functional>
#include <regex>
#include <string>
#include <vector>

#include "io/model_files.h"
#include "quill/dtype.h"
#include "quill/status.h"
#include "quill/tensor.h"

namespace quill::quant {

struct QuantRule {
  std::string pattern;  // as written
  std::regex regex;
  bool keep = false;  // "keep": copy unchanged
  DType dtype = DType::kBF16;
};

struct TensorPlan {
  std::string name;
  Shape shape;
  DType from = DType::kF32, to = DType::kF32;
  std::string reason;  // why this type: "block linear", "rule 'x=q8_0'", "1-D: copied", ...
};

// "tq2_0_g128" | "q8_0" | "fp8_e4m3" | "bf16" | "f16" | "f32" (case-insensitive).
Result<DType> parse_quant_type(const std::string& name);
// "REGEX=TYPE[,REGEX=TYPE...]"; errors name the bad rule (bad regex, unknown type, missing '=').
Result<std::vector<QuantRule>> parse_quant_rules(const std::string& spec);

std::vector<TensorPlan> plan_quantization(const ModelFiles& files, DType type, const std::vector<QuantRule>& rules);

// Converts `src` (any float dtype) to `to`. rel_error: ||W - dequant(Q(W))|| / ||W|| (0 for exact
// copies and all-zero tensors). fp8_e4m3 also fills `row_scale` (f32 [N], scale = rowmax|w| / 448),
// which the file stores as "<name>_scale" (so "x.weight" gets "x.weight_scale").
Result<Tensor> convert_tensor(const Tensor& src, DType to, double* rel_error, double* sq_error = nullptr,
                              double* sq_norm = nullptr, Tensor* row_scale = nullptr);

struct TensorReport {
  std::string name;
  DType from = DType::kF32, to = DType::kF32;
  double rel_error = 0;
  std::string reason;
};
struct QuantizeReport {
  std::vector<TensorReport> tensors;
  int64_t bytes_in = 0, bytes_out = 0;
  double rel_error = 0;  // over all converted tensors: sqrt(sum ||W - W'||^2 / sum ||W||^2)
};

// Bytes the plan's tensors take before and after.
void plan_bytes(const ModelFiles& files, const std::vector<TensorPlan>& plan, int64_t* bytes_in, int64_t* bytes_out);

// Runs `plan` and writes GGUF v3 to `out_path`: metadata general.architecture, quill.config (the
// model config JSON), quill.quantize.{type,rules,source}. `on_tensor(done)` after each tensor.
Status quantize_model(const ModelFiles& files, const std::vector<TensorPlan>& plan, DType type,
                      const std::string& rules_text, const std::string& out_path, QuantizeReport* report,
                      const std::function<void(int)>& on_tensor = nullptr);

// The same conversion kept in memory: a ModelFiles with the converted tensors (and fp8's
// "<name>_scale"), the source's config and path (format "quantized"), as reading quantize_model's
// GGUF back would give. For small models whose quantized variant is chosen at load time.
Result<std::shared_ptr<ModelFiles>> quantize_in_memory(const ModelFiles& files, DType type);

}  // namespace quill::quant
