#include "api/line_variants.h"

#include <cinttypes>
#include <cstdio>
#include <filesystem>
#include <string_view>

#include <nlohmann/json.hpp>

#include "core/input_files.h"
#include "core/mapped_file.h"
#include "io/json_util.h"
#include "quant/quantize_model.h"

namespace quill {

Result<uint64_t> fnv1a64_file(const std::string& path) {
  QUILL_ASSIGN_OR_RETURN(auto file, MappedFile::open(path));
  uint64_t h = 14695981039346656037ull;
  const uint8_t* p = file->data();
  for (size_t i = 0; i < size_t(file->size()); ++i) h = (h ^ p[i]) * 1099511628211ull;
  return h;
}

Result<DType> line_weights_for(const std::string& model_dir, const std::string& weights, bool ungated) {
  if (weights.empty() || weights == "f32") return DType::kF32;
  auto type = quant::parse_quant_type(weights);
  if (!type) return invalid_argument("--weights: ", type.status().message());
  if (*type == DType::kF32) return DType::kF32;
  if (ungated) return *type;
  const std::string name = dtype_name(*type);
  const std::string path = model_dir + "/variants.json";
  const std::string what_to_do =
      str_cat("use the f32 weights (--weights f32, the default), evaluate the variant with tools/gate_variants.py, ",
              "or pass --ungated to use it unchecked");
  std::error_code ec;
  if (!std::filesystem::exists(path, ec))
    return not_found("no quantized variant of this line model has been evaluated (no variants.json), so the ", name,
                     " variant is not used; ", what_to_do)
        .with_file(path);
  note_input_file(path);
  QUILL_ASSIGN_OR_RETURN(auto file, MappedFile::open(path));
  auto parsed =
      parse_json_checked(std::string_view(reinterpret_cast<const char*>(file->data()), size_t(file->size())), "variants.json");
  if (!parsed) return parsed.take_status().with_file(path);
  const nlohmann::json& j = *parsed;
  const auto hash = j.is_object() ? j.find("model_fnv1a64") : j.end();
  const auto variants = j.is_object() ? j.find("variants") : j.end();
  if (hash == j.end() || !hash->is_string() || variants == j.end() || !variants->is_object())
    return invalid_file("variants.json must be an object with \"model_fnv1a64\" (string) and \"variants\" (object)")
        .with_file(path);
  const auto v = variants->find(name);
  if (v == variants->end())
    return not_found("the ", name, " variant of this line model has not been evaluated, so it is not used; ",
                     what_to_do)
        .with_file(path);
  QUILL_ASSIGN_OR_RETURN(uint64_t h, fnv1a64_file(model_dir + "/model.safetensors"));
  char got[24];
  std::snprintf(got, sizeof(got), "%016" PRIx64, h);
  if (hash->get<std::string>() != got)
    return make_error(ErrorCode::kInvalidArgument, "variants.json was measured on another model.safetensors, so its ",
                      name, " verdict does not apply to this one; ", what_to_do)
        .with_file(path)
        .with_expected_found(hash->get<std::string>(), got);
  const auto passed = v->is_object() ? v->find("passed") : v->end();
  if (passed == v->end() || !passed->is_boolean())
    return invalid_file("variants.json: \"", name, "\" has no boolean \"passed\"").with_file(path);
  if (!passed->get<bool>()) {
    const auto why = v->find("why");
    return invalid_argument("the ", name, " variant of this line model failed its quality gate",
                            why != v->end() && why->is_string() ? " (" + why->get<std::string>() + ")" : "",
                            ", so it is not used; ", what_to_do)
        .with_file(path);
  }
  return *type;
}

}  // namespace quill
