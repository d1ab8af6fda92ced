// Read-only memory map of a whole file. Tensors view into it; shared ownership keeps the map
// alive while any view exists.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "quill/status.h"

namespace quill {

class MappedFile {
 public:
  static Result<std::shared_ptr<MappedFile>> open(const std::string& path);
  ~MappedFile();
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;

  const uint8_t* data() const { return data_; }
  uint64_t size() const { return size_; }
  const std::string& path() const { return path_; }

  // Gives back the whole pages of [p, p + bytes) if that range lies in a live map: their memory is
  // freed now and the bytes read back from the file when next touched (the maps are read-only, so
  // nothing is lost). For a copy that replaces the original, e.g. weights repacked once. False, and
  // nothing done, where the range is not in one map (heap memory must never be given back this way).
  static bool release_pages(const void* p, size_t bytes);

 private:
  MappedFile() = default;
  std::string path_;
  const uint8_t* data_ = nullptr;
  uint64_t size_ = 0;
};

}  // namespace quill
