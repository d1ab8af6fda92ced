// `quill info PATH [--json] [--tensors]`: what a model file or folder holds — format, detected
// architecture, config, tensor count, dtype histogram, parameters and bytes.
#include <cstdio>
#include <map>
#include <string>

#include "cli/command.h"
#include "cli/human_units.h"
#include "io/architecture.h"
#include "io/json_util.h"
#include "io/model_files.h"

namespace quill::cli {
namespace {

struct DTypeStats {
  int64_t tensors = 0, parameters = 0, bytes = 0;
};

// Long arrays (GGUF tokenizer vocabularies) would drown the output; they are summarised.
nlohmann::json summarize(const nlohmann::json& j, size_t max_array = 32) {
  if (j.is_array() && j.size() > max_array) return str_cat("<array of ", j.size(), " items>");
  if (j.is_array() || j.is_object()) {
    nlohmann::json out = j.is_array() ? nlohmann::json::array() : nlohmann::json::object();
    for (auto it = j.begin(); it != j.end(); ++it) {
      if (j.is_array())
        out.push_back(summarize(*it, max_array));
      else
        out[it.key()] = summarize(*it, max_array);
    }
    return out;
  }
  return j;
}

int run_info(const std::string& path, bool json, bool list_tensors) {
  auto opened = ModelFiles::open(path);
  if (!opened) return report_error(opened.status());
  const ModelFiles& m = **opened;
  const ArchitectureGuess arch = detect_architecture(m);

  std::map<std::string, DTypeStats> by_dtype;
  int64_t parameters = 0, bytes = 0;
  for (const auto& [name, e] : m.entries()) {
    auto& s = by_dtype[dtype_name(e.tensor.dtype())];
    const int64_t n = e.tensor.numel(), b = e.tensor.nbytes();
    s.tensors += 1;
    s.parameters += n;
    s.bytes += b;
    parameters += n;
    bytes += b;
  }
  const nlohmann::json config = summarize(m.config());

  if (json) {
    nlohmann::json out = {
        {"path", m.path()},
        {"format", m.format()},
        {"files", m.files()},
        {"architecture", {{"name", arch.name}, {"source", arch.source}}},
        {"config_path", m.config_path()},
        {"config", config},
        {"tensor_count", m.entries().size()},
        {"parameters", parameters},
        {"bytes", bytes},
    };
    nlohmann::json dt = nlohmann::json::object();
    for (const auto& [name, s] : by_dtype)
      dt[name] = {{"tensors", s.tensors}, {"parameters", s.parameters}, {"bytes", s.bytes}};
    out["dtypes"] = dt;
    if (list_tensors) {
      nlohmann::json ts = nlohmann::json::array();
      for (const auto& [name, e] : m.entries())
        ts.push_back({{"name", name},
                      {"dtype", dtype_name(e.tensor.dtype())},
                      {"shape", e.tensor.shape().to_vector()},
                      {"file", e.file}});
      out["tensors"] = ts;
    }
    std::printf("%s\n", dump_json(out).c_str());
    return kExitOk;
  }

  std::printf("path:         %s\n", m.path().c_str());
  std::printf("format:       %s\n", m.format().c_str());
  for (const auto& f : m.files()) std::printf("file:         %s\n", f.c_str());
  std::printf("architecture: %s%s%s%s\n", arch.name.c_str(), arch.source.empty() ? "" : " (from ", arch.source.c_str(),
              arch.source.empty() ? "" : ")");
  if (m.has_config()) {
    std::printf("config:       %s\n", m.config_path().c_str());
    for (const auto& [key, value] : config.items()) std::printf("  %-32s %s\n", key.c_str(), dump_json(value).c_str());
  } else {
    std::printf("config:       none\n");
  }
  std::printf("tensors:      %zu\n", m.entries().size());
  std::printf("parameters:   %lld (%s)\n", static_cast<long long>(parameters), human_count(parameters).c_str());
  std::printf("bytes:        %lld (%s)\n", static_cast<long long>(bytes), human_bytes(bytes).c_str());
  std::printf("dtypes:\n  %-12s %8s %16s %16s\n", "dtype", "tensors", "parameters", "bytes");
  for (const auto& [name, s] : by_dtype)
    std::printf("  %-12s %8lld %16lld %16lld\n", name.c_str(), static_cast<long long>(s.tensors),
                static_cast<long long>(s.parameters), static_cast<long long>(s.bytes));
  if (list_tensors) {
    std::printf("tensor list:\n");
    for (const auto& [name, e] : m.entries())
      std::printf("  %-60s %-10s %s\n", name.c_str(), dtype_name(e.tensor.dtype()),
                  e.tensor.shape().to_string().c_str());
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
