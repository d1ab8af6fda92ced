#include "quant/quantize_model.h"

#include <algorithm>
#include <cctype>
#include <cmath>

#include "io/architecture.h"
#include "io/gguf.h"
#include "quant/formats.h"

namespace quill::quant {

namespace {

std::string lower(std::string s) {
  for (char& c : s) c = char(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

// diffusers' block names, BFL's (double_blocks.N., single_blocks.N.) for FLUX checkpoints, and
// transformers' decoder layers (model.layers.N.) for text encoders.
bool in_transformer_block(const std::string& name) {
  static const std::regex block(
      R"((^|\.)((single_)?transformer_blocks|double_blocks|single_blocks|layers)\.\d+\.)");
  return std::regex_search(name, block);
}

int64_t block_size(DType t) {
  if (t == DType::kTQ2_0_G128) return kTq2BlockSize;
  if (t == DType::kQ8_0) return kQ8BlockSize;
  return 1;
}

// A 2-D target that needs K % block == 0 falls back to bf16 when it does not divide.
TensorPlan fit(TensorPlan p, DType want, std::string reason) {
  const int64_t block = block_size(want);
  if (p.shape.rank() != 2 && block > 1) {
    p.to = DType::kBF16;
    p.reason = reason + "; not 2-D, bf16";
  } else if (block > 1 && p.shape[1] % block != 0) {
    p.to = DType::kBF16;
    p.reason = str_cat(reason, "; K=", p.shape[1], " is not a multiple of ", block, ", bf16");
  } else {
    p.to = want;
    p.reason = std::move(reason);
  }
  return p;
}

}  // namespace

Result<DType> parse_quant_type(const std::string& name) {
  const std::string n = lower(name);
  if (n == "tq2_0_g128") return DType::kTQ2_0_G128;
  if (n == "q8_0") return DType::kQ8_0;
  if (n == "bf16") return DType::kBF16;
  if (n == "f16") return DType::kF16;
  if (n == "f32") return DType::kF32;
  if (n == "fp8_e4m3" || n == "f8_e4m3") return DType::kF8E4M3;
  return invalid_argument("unknown weight type '", name, "' (expected tq2_0_g128, q8_0, fp8_e4m3, bf16, f16 or f32)");
}

Result<std::vector<QuantRule>> parse_quant_rules(const std::string& spec) {
  std::vector<QuantRule> rules;
  size_t start = 0;
  while (start <= spec.size()) {
    size_t end = spec.find(',', start);
    if (end == std::string::npos) end = spec.size();
    const std::string item = spec.substr(start, end - start);
    start = end + 1;
    if (item.empty()) {
      if (end == spec.size()) break;
      continue;
    }
    const size_t eq = item.rfind('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == item.size())
      return invalid_argument("rule '", item, "' is not REGEX=TYPE");
    QuantRule r;
    r.pattern = item;
    try {
      r.regex = std::regex(item.substr(0, eq), std::regex::ECMAScript);
    } catch (const std::regex_error& e) {
      return invalid_argument("rule '", item, "': bad regular expression (", e.what(), ")");
    }
    const std::string type = item.substr(eq + 1);
    if (lower(type) == "keep") {
      r.keep = true;
    } else {
      auto t = parse_quant_type(type);
      if (!t) {
        Status st = t.take_status();
        return st.with_context(str_cat("rule '", item, "'"));
      }
      r.dtype = *t;
    }
    rules.push_back(std::move(r));
  }
  return rules;
}

std::vector<TensorPlan> plan_quantization(const ModelFiles& files, DType type, const std::vector<QuantRule>& rules) {
  std::vector<TensorPlan> plan;
  for (const auto& [name, entry] : files.entries()) {
    TensorPlan p;
    p.name = name;
    p.shape = entry.tensor.shape();
    p.from = p.to = entry.tensor.dtype();
    const bool is_float = dtype_traits(p.from).is_float;
    if (!is_float) {
      p.reason = "not a float tensor: copied";
    } else if (p.shape.rank() < 2) {
      p.reason = "1-D (bias / norm scale): copied";
    } else {
      const QuantRule* rule = nullptr;
      for (const QuantRule& r : rules)
        if (std::regex_search(name, r.regex)) {
          rule = &r;
          break;
        }
      if (rule && rule->keep) {
        p.reason = str_cat("rule '", rule->pattern, "': copied");
      } else if (rule) {
        p = fit(std::move(p), rule->dtype, str_cat("rule '", rule->pattern, "'"));
      } else if (p.shape.rank() == 2 && in_transformer_block(name) && name.size() > 7 &&
                 name.compare(name.size() - 7, 7, ".weight") == 0) {
        p = fit(std::move(p), type, "transformer-block linear");
      } else {
        p.to = DType::kBF16;
        p.reason = "embedding / final projection: bf16";
      }
    }
    plan.push_back(std::move(p));
  }
  return plan;
}

Result<Tensor> convert_tensor(const Tensor& src, DType to, double* rel_error, double* sq_error, double* sq_norm,
                              Tensor* row_scale) {
  if (rel_error) *rel_error = 0;
  if (sq_error) *sq_error = 0;
  if (sq_norm) *sq_norm = 0;
  if (!src.is_contiguous()) return invalid_argument("convert_tensor needs a contiguous tensor, got ", src.describe());
  if (src.dtype() == to) return src;
  if (!dtype_traits(src.dtype()).is_float)
    return unsupported("cannot convert ", dtype_name(src.dtype()), " tensors to ", dtype_name(to));
  const int64_t n = src.numel();
  const Tensor& c = src;
  Tensor f = Tensor::empty(DType::kF32, c.shape());
  if (!convert_to_f32(c.dtype(), c.data(), f.data_as<float>(), n))
    return unsupported("cannot read ", dtype_name(c.dtype()), " as f32");
  Tensor out;
  if (to == DType::kF32) {
    out = f;
  } else if (to == DType::kTQ2_0_G128 || to == DType::kQ8_0) {
    if (c.rank() != 2) return invalid_argument(dtype_name(to), " needs a 2-D weight, got ", c.shape().to_string());
    QUILL_ASSIGN_OR_RETURN(out, quantize_tensor(f, to));
  } else if (to == DType::kF8E4M3) {
    if (c.rank() != 2) return invalid_argument("fp8_e4m3 needs a 2-D weight, got ", c.shape().to_string());
    if (!row_scale) return invalid_argument("fp8_e4m3 conversion needs somewhere to put the row scales");
    out = Tensor::empty(to, c.shape());
    *row_scale = Tensor::empty(DType::kF32, Shape{c.dim(0)});
    QUILL_RETURN_IF_ERROR(quantize_fp8_e4m3_rows(f.data_as<const float>(), c.dim(0), c.dim(1), out.data_as<uint8_t>(),
                                                 row_scale->data_as<float>()));
  } else if (to == DType::kBF16 || to == DType::kF16) {
    out = Tensor::empty(to, c.shape());
    convert_from_f32(to, f.data_as<const float>(), out.data(), n);
  } else {
    return unsupported("no conversion to ", dtype_name(to));
  }
  // Reconstruction error against the source values.
  std::vector<float> back(static_cast<size_t>(n));
  if (to == DType::kTQ2_0_G128 || to == DType::kQ8_0) {
    QUILL_ASSIGN_OR_RETURN(Tensor d, dequantize_tensor(out));
    std::copy(d.data_as<const float>(), d.data_as<const float>() + n, back.begin());
  } else if (to == DType::kF8E4M3) {
    QUILL_RETURN_IF_ERROR(dequantize_fp8_e4m3_rows(out.data_as<const uint8_t>(), row_scale->data_as<const float>(),
                                                   c.dim(0), c.dim(1), back.data()));
  } else {
    convert_to_f32(out.dtype(), out.data(), back.data(), n);
  }
  double err = 0, norm = 0;
  const float* w = f.data_as<const float>();
  for (int64_t i = 0; i < n; ++i) {
    const double e = double(w[i]) - double(back[size_t(i)]);
    err += e * e;
    norm += double(w[i]) * double(w[i]);
  }
  if (rel_error) *rel_error = norm > 0 ? std::sqrt(err / norm) : 0.0;
  if (sq_error) *sq_error = err;
  if (sq_norm) *sq_norm = norm;
  return out;
}

void plan_bytes(const ModelFiles& files, const std::vector<TensorPlan>& plan, int64_t* bytes_in, int64_t* bytes_out) {
  *bytes_in = *bytes_out = 0;
  for (const auto& p : plan) {
    *bytes_in += files.entries().at(p.name).tensor.nbytes();
    const auto& t = dtype_traits(p.to);
    *bytes_out += p.shape.numel() / t.block_size * t.block_bytes;
    if (p.to == DType::kF8E4M3 && p.from != p.to) *bytes_out += p.shape[0] * int64_t(sizeof(float));  // row scales
  }
}

Status quantize_model(const ModelFiles& files, const std::vector<TensorPlan>& plan, DType type,
                      const std::string& rules_text, const std::string& out_path, QuantizeReport* report,
                      const std::function<void(int)>& on_tensor) {
  QuantizeReport r;
  plan_bytes(files, plan, &r.bytes_in, &r.bytes_out);
  GgufWriter writer;
  const ArchitectureGuess arch = detect_architecture(files);
  QUILL_RETURN_IF_ERROR(
      writer.add("general.architecture", GgufValue::string(arch.name.empty() ? "unknown" : arch.name)));
  QUILL_RETURN_IF_ERROR(writer.add("quill.config", GgufValue::string(files.config().dump())));
  QUILL_RETURN_IF_ERROR(writer.add("quill.quantize.type", GgufValue::string(dtype_name(type))));
  QUILL_RETURN_IF_ERROR(writer.add("quill.quantize.rules", GgufValue::string(rules_text)));
  QUILL_RETURN_IF_ERROR(writer.add("quill.quantize.source", GgufValue::string(files.path())));
  double total_err = 0, total_norm = 0;
  int done = 0;
  for (const auto& p : plan) {
    auto it = files.entries().find(p.name);
    if (it == files.entries().end()) return not_found("planned tensor is not in the model").with_tensor(p.name);
    double rel = 0, sq_err = 0, sq_norm = 0;
    Tensor row_scale;
    auto converted = convert_tensor(it->second.tensor, p.to, &rel, &sq_err, &sq_norm, &row_scale);
    if (!converted) return converted.take_status().with_tensor(p.name).with_file(it->second.file);
    if (row_scale.defined() && row_scale.numel() > 0)
      QUILL_RETURN_IF_ERROR(writer.add_tensor(p.name + "_scale", row_scale));
    if (p.to != p.from) {
      total_err += sq_err;
      total_norm += sq_norm;
    }
    QUILL_RETURN_IF_ERROR(writer.add_tensor(p.name, *converted));
    r.tensors.push_back({p.name, p.from, p.to, rel, p.reason});
    if (on_tensor) on_tensor(++done);
  }
  QUILL_RETURN_IF_ERROR(writer.write(out_path));
  r.rel_error = total_norm > 0 ? std::sqrt(total_err / total_norm) : 0.0;
  if (report) *report = std::move(r);
  return Status::ok();
}

Result<std::shared_ptr<ModelFiles>> quantize_in_memory(const ModelFiles& files, DType type) {
  auto out = std::make_shared<ModelFiles>();
  out->set(files.path(), "quantized", files.config());
  for (const auto& p : plan_quantization(files, type, {})) {
    const auto it = files.entries().find(p.name);
    if (it == files.entries().end()) return not_found("planned tensor is not in the model").with_tensor(p.name);
    double rel = 0;
    Tensor row_scale;
    auto converted = convert_tensor(it->second.tensor, p.to, &rel, nullptr, nullptr, &row_scale);
    if (!converted) return converted.take_status().with_tensor(p.name).with_file(it->second.file);
    if (row_scale.defined() && row_scale.numel() > 0)
      out->entries()[p.name + "_scale"] = {std::move(row_scale), it->second.file};
    out->entries()[p.name] = {std::move(converted).value(), it->second.file};
  }
  return out;
}

}  // namespace quill::quant
