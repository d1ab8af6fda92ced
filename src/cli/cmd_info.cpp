// `quill info PATH [--json] [--tensors]`: what a model file or folder holds — format, detected
// architecture, config, tensor count, dtype histogram, parameters and bytes (describe_model_json,
// the same inventory `quill.info()` returns in Python).
#include <cstdio>
#include <string>

#include "cli/command.h"
#include "cli/human_units.h"
#include "io/json_util.h"
#include "quill/model_info.h"

namespace quill::cli {
namespace {

int run_info(const std::string& path, bool json, bool list_tensors) {
  auto described = describe_model_json(path, list_tensors);
  if (!described) return report_error(described.status());
  if (json) {
    std::printf("%s\n", described->c_str());
    return kExitOk;
  }
  const nlohmann::json d = nlohmann::json::parse(*described);
  const auto str = [](const nlohmann::json& v) { return v.get<std::string>(); };
  std::printf("path:         %s\n", str(d["path"]).c_str());
  std::printf("format:       %s\n", str(d["format"]).c_str());
  for (const auto& f : d["files"]) std::printf("file:         %s\n", str(f).c_str());
  const std::string arch = str(d["architecture"]["name"]), source = str(d["architecture"]["source"]);
  std::printf("architecture: %s%s%s%s\n", arch.c_str(), source.empty() ? "" : " (from ", source.c_str(),
              source.empty() ? "" : ")");
  if (!d["config"].empty()) {
    std::printf("config:       %s\n", str(d["config_path"]).c_str());
    for (const auto& [key, value] : d["config"].items())
      std::printf("  %-32s %s\n", key.c_str(), dump_json(value).c_str());
  } else {
    std::printf("config:       none\n");
  }
  const int64_t parameters = d["parameters"], bytes = d["bytes"];
  std::printf("tensors:      %lld\n", static_cast<long long>(d["tensor_count"].get<int64_t>()));
  std::printf("parameters:   %lld (%s)\n", static_cast<long long>(parameters), human_count(parameters).c_str());
  std::printf("bytes:        %lld (%s)\n", static_cast<long long>(bytes), human_bytes(bytes).c_str());
  std::printf("dtypes:\n  %-12s %8s %16s %16s\n", "dtype", "tensors", "parameters", "bytes");
  for (const auto& [name, s] : d["dtypes"].items())
    std::printf("  %-12s %8lld %16lld %16lld\n", name.c_str(), static_cast<long long>(s["tensors"].get<int64_t>()),
                static_cast<long long>(s["parameters"].get<int64_t>()), static_cast<long long>(s["bytes"].get<int64_t>()));
  if (list_tensors) {
    std::printf("tensor list:\n");
    for (const auto& t : d["tensors"]) {
      std::string shape = "[";
      for (size_t i = 0; i < t["shape"].size(); ++i) shape += (i ? ", " : "") + std::to_string(t["shape"][i].get<int64_t>());
      shape += "]";
      std::printf("  %-60s %-10s %s\n", str(t["name"]).c_str(), str(t["dtype"]).c_str(), shape.c_str());
    }
  }
  return kExitOk;
}

Runner setup(CLI::App& sub) {
  auto path = std::make_shared<std::string>();
  auto json = std::make_shared<bool>(false);
  auto tensors = std::make_shared<bool>(false);
  sub.add_option("PATH", *path,
                 "A model folder (diffusers/transformers), .safetensors, .safetensors.index.json or .gguf")
      ->required();
  sub.add_flag("--json", *json, "Print one JSON object instead of text");
  sub.add_flag("--tensors", *tensors, "Also list every tensor (name, dtype, shape)");
  return [=] { return run_info(*path, *json, *tensors); };
}

}  // namespace
QUILL_COMMAND(info, "info", "Describe a model: format, architecture, config, tensors, dtypes, parameters", setup);
}  // namespace quill::cli
