// safetensors reader: memory-mapped, zero-copy tensor views, every header field validated
// (header length bounds, JSON well-formed, dtype known, offsets inside the data section and
// non-overlapping, byte size = shape x dtype). Also a writer (used by tools and tests).
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "core/mapped_file.h"
#include "quill/status.h"
#include "quill/tensor.h"

namespace quill {

struct TensorInfo {
  std::string name;
  DType dtype = DType::kF32;
  Shape shape;
  uint64_t offset = 0;  // absolute byte offset in the file
  uint64_t nbytes = 0;
};

class SafetensorsFile {
 public:
  static Result<std::shared_ptr<SafetensorsFile>> open(const std::string& path);
  // Parse from memory (fuzzing, tests); `path` is only used in error messages.
  static Result<std::shared_ptr<SafetensorsFile>> parse(std::shared_ptr<MappedFile> file);

  const std::string& path() const;
  const std::vector<TensorInfo>& tensors() const { return infos_; }  // in file order
  const TensorInfo* find(const std::string& name) const;
  Result<Tensor> tensor(const std::string& name) const;  // zero-copy view into the map
  const std::map<std::string, std::string>& metadata() const { return metadata_; }

 private:
  std::shared_ptr<MappedFile> file_;
  std::vector<TensorInfo> infos_;
  std::map<std::string, size_t> index_;
  std::map<std::string, std::string> metadata_;
};

// Writes tensors (contiguous CPU tensors of any scalar dtype) with optional metadata.
Status write_safetensors(const std::string& path, const std::vector<std::pair<std::string, Tensor>>& tensors,
                         const std::map<std::string, std::string>& metadata = {});

}  // namespace quill
