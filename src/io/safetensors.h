// safetensors reader: memory-mapped, zero-copy tensor views, every header field validated
// (header length bounds, JSON well-formed, dtype known, offsets inside the data section and
// non-overlapping, byte size = shape x dtype). Also a writer (used by tools and tests).
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/mapped_file.h"
#include "io/file_bytes.h"
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

// Headers larger than this are refused before parsing (real ones are well under 10 MB).
inline constexpr uint64_t kSafetensorsMaxHeaderBytes = 100ull << 20;

class SafetensorsFile {
 public:
  static Result<std::shared_ptr<SafetensorsFile>> open(const std::string& path);
  // Parse a mapped file; views share ownership of the map.
  static Result<std::shared_ptr<SafetensorsFile>> parse(std::shared_ptr<MappedFile> file);
  // Parse from memory (fuzzing, tests); `bytes.path` is only used in error messages.
  static Result<std::shared_ptr<SafetensorsFile>> parse(FileBytes bytes);

  const std::string& path() const { return bytes_.path; }
  const std::vector<TensorInfo>& tensors() const { return infos_; }  // in file order
  const TensorInfo* find(const std::string& name) const;
  // Zero-copy view into the map. The rare tensor whose bytes are not aligned to its element
  // size (legal in the format, never written by the reference writers) is copied instead.
  Result<Tensor> tensor(const std::string& name) const;
  const std::map<std::string, std::string>& metadata() const { return metadata_; }

 private:
  FileBytes bytes_;
  std::vector<TensorInfo> infos_;
  std::map<std::string, size_t> index_;
  std::map<std::string, std::string> metadata_;
};

// The safetensors dtype string ("BF16") for a Quill dtype; nullopt for block-quantized types.
std::optional<std::string_view> safetensors_dtype_name(DType t);
// The Quill dtype for a safetensors dtype string; nullopt when Quill has none.
std::optional<DType> dtype_from_safetensors_name(std::string_view name);

// Writes tensors (contiguous CPU tensors of any scalar dtype) with optional metadata. The data
// section is ordered by element size (largest first, stable) so every tensor stays aligned to its
// element size, as the reference writer does; the file is written beside `path` and renamed.
Status write_safetensors(const std::string& path, const std::vector<std::pair<std::string, Tensor>>& tensors,
                         const std::map<std::string, std::string>& metadata = {});

}  // namespace quill
