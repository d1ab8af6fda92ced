// One view over a model's weights and config, whatever the packaging:
//   - a diffusers model folder: config.json + diffusion_pytorch_model.safetensors, or sharded
//     (*.safetensors.index.json + shards), or model.safetensors (transformers);
//   - a single .safetensors file (config from a config.json beside it, if any);
//   - a *.safetensors.index.json;
//   - a GGUF file (config from its metadata: key "quill.config" holds the config JSON).
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
  const std::string& format() const { return format_; }  // "diffusers", "safetensors", "safetensors-sharded", "gguf"
  const nlohmann::json& config() const { return config_; }  // empty object when there is none
  bool has_config() const { return !config_.empty(); }

  std::vector<std::string> tensor_names() const;  // sorted
  bool has(const std::string& name) const;
  // Zero-copy view; error names the tensor and the file it was looked for in.
  Result<Tensor> get(const std::string& name) const;
  // As get(), and checks the shape; error says expected vs found.
  Result<Tensor> get(const std::string& name, const Shape& expected) const;

  // Implementation detail shared by the format readers.
  struct Entry {
    Tensor tensor;
    std::string file;
  };
  std::map<std::string, Entry>& entries() { return entries_; }
  void set(std::string path, std::string format, nlohmann::json config) {
    path_ = std::move(path);
    format_ = std::move(format);
    config_ = std::move(config);
  }

 private:
  std::string path_, format_;
  nlohmann::json config_ = nlohmann::json::object();
  std::map<std::string, Entry> entries_;
};

}  // namespace quill
