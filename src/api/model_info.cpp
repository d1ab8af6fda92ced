// describe_model_json: the inventory behind `quill info` and `quill.info()`.
#include "quill/model_info.h"

#include <map>

#include "io/architecture.h"
#include "io/json_util.h"
#include "io/model_files.h"

namespace quill {
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

}  // namespace

Result<std::string> describe_model_json(const std::string& path, bool list_tensors) {
  QUILL_ASSIGN_OR_RETURN(auto opened, ModelFiles::open(path));
  const ModelFiles& m = *opened;
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
  nlohmann::json out = {
      {"path", m.path()},
      {"format", m.format()},
      {"files", m.files()},
      {"architecture", {{"name", arch.name}, {"source", arch.source}}},
      {"config_path", m.config_path()},
      {"config", summarize(m.config())},
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
  return dump_json(out);
}

}  // namespace quill
