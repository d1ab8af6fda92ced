// The bytes a format parser reads: a memory map, or any caller-owned buffer (fuzzing, tests).
// Parsers take this instead of a MappedFile so they can run on memory without a temp file;
// `owner` keeps the bytes alive and becomes the owner of every tensor view into them.
#pragma once

#include <bit>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "core/mapped_file.h"

namespace quill {

static_assert(std::endian::native == std::endian::little, "file formats are read in place: little-endian hosts only");

struct FileBytes {
  const uint8_t* data = nullptr;
  uint64_t size = 0;
  std::string path;                   // for error messages only
  std::shared_ptr<const void> owner;  // may be null for borrowed bytes

  static FileBytes of(const std::shared_ptr<MappedFile>& file) {
    return {file->data(), file->size(), file->path(), file};
  }
  // The caller keeps `data` alive for as long as the parser's result (and its views) live.
  static FileBytes borrowed(const void* data, uint64_t size, std::string path) {
    return {static_cast<const uint8_t*>(data), size, std::move(path), nullptr};
  }
  // An owned copy (64-byte aligned, like a page-aligned map as far as element alignment goes).
  static FileBytes copy_of(const void* data, uint64_t size, std::string path) {
    auto buf = std::make_shared<std::vector<uint64_t>>((size + 7) / 8 + 1);
    if (size) std::memcpy(buf->data(), data, size);
    const auto* p = reinterpret_cast<const uint8_t*>(buf->data());
    return {p, size, std::move(path), std::shared_ptr<const void>(buf, p)};
  }
};

// Bounds-checked little-endian cursor over untrusted bytes. Every read checks the remaining
// length first; on failure it returns false and leaves the cursor where it was.
class ByteReader {
 public:
  ByteReader(const uint8_t* data, uint64_t size) : data_(data), size_(size) {}

  uint64_t pos() const { return pos_; }
  uint64_t size() const { return size_; }
  uint64_t remaining() const { return size_ - pos_; }
  bool skip(uint64_t n) {
    if (n > remaining()) return false;
    pos_ += n;
    return true;
  }
  template <typename T>
  bool read(T* out) {
    if (sizeof(T) > remaining()) return false;
    std::memcpy(out, data_ + pos_, sizeof(T));
    pos_ += sizeof(T);
    return true;
  }
  bool read_bytes(uint64_t n, const uint8_t** out) {
    if (n > remaining()) return false;
    *out = data_ + pos_;
    pos_ += n;
    return true;
  }

 private:
  const uint8_t* data_;
  uint64_t size_;
  uint64_t pos_ = 0;
};

}  // namespace quill
