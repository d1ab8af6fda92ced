// One view over a model's weights and config, whatever the packaging:
//   - a diffusers model folder: config.json + diffusion_pytorch_model.safetensors, or sharded
//     (*.safetensors.index.json + shards), or model.safetensors (transformers);
//   - a single .safetensors file (config from a config.json beside it, if any);
//   - a *.safetensors.index.json;
//   - a GGUF file (config from its metadata: key "quill.config" holds the config JSON; without
//     it, the whole metadata as one JSON object).
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "quill/status.h"
#include "quill/tensor.h"

namespace quill {

class ModelFiles {
 public:
  static Result<std::shared_ptr<ModelFiles>> open(const std::string& path);

  const std::string& path() const { return path_; }
  const std::string& format() const { return format_; }     // "diffusers", "safetensors", "safetensors-sharded", "gguf"
  const nlohmann::json& config() const { return config_; }  // empty object when there is none
  bool has_config() const { return !config_.empty(); }
  const std::string& config_path() const { return config_path_; }   // "" when none; "<gguf>:quill.config" etc.
  const std::vector<std::string>& files() const { return files_; }  // weight files read, in order

  std::vector<std::string> tensor_names() const;  // sorted
  bool has(const std::string& name) const;
  // Zero-copy view; error names the tensor, the file(s) it was looked for in, and close names.
  Result<Tensor> get(const std::string& name) const;
  // As get(), and checks the shape; error says expected vs found.
  Result<Tensor> get(const std::string& name, const Shape& expected) const;
  // Up to `max` tensor names close to `name` (edit distance, or the same name under another prefix).
  std::vector<std::string> similar_names(const std::string& name, size_t max = 3) const;

  // Implementation detail shared by the format readers.
  struct Entry {
    Tensor tensor;
    std::string file;
  };
  std::map<std::string, Entry>& entries() { return entries_; }
  const std::map<std::string, Entry>& entries() const { return entries_; }
  void set(std::string path, std::string format, nlohmann::json config) {
    path_ = std::move(path);
    format_ = std::move(format);
    config_ = std::move(config);
  }

 private:
  friend class ModelFilesLoader;
  std::string path_, format_, config_path_;
  nlohmann::json config_ = nlohmann::json::object();
  std::vector<std::string> files_;
  std::map<std::string, Entry> entries_;
};

}  // namespace quill
