// Helpers for the I/O tests: a temp folder, raw byte builders for hand-made (and hand-broken)
// safetensors and GGUF files.
#pragma once

#include <gtest/gtest.h>
#include <stdlib.h>

#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <vector>

#include "quill/status.h"

namespace quill::testing {

class TempDir {
 public:
  TempDir() {
    std::string tmpl = (std::filesystem::temp_directory_path() / "quill_io_XXXXXX").string();
    if (!mkdtemp(tmpl.data())) throw std::runtime_error("mkdtemp failed");
    path_ = tmpl;
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  std::string file(const std::string& name) const { return (path_ / name).string(); }
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

// Interop fixtures written by the official Python packages (testdata/make_reference.py).
inline std::string io_testdata(const std::string& name) {
  return std::string(QUILL_SOURCE_DIR) + "/tests/io/testdata/" + name;
}

inline void write_bytes(const std::string& path, const std::string& bytes) {
  std::filesystem::create_directories(std::filesystem::path(path).parent_path());
  std::ofstream f(path, std::ios::binary);
  f.write(bytes.data(), std::streamsize(bytes.size()));
}

// Appends little-endian values and GGUF-style strings to a byte string.
class Raw {
 public:
  template <typename T>
  Raw& put(T v) {
    s_.append(reinterpret_cast<const char*>(&v), sizeof(T));
    return *this;
  }
  Raw& u8(uint8_t v) { return put(v); }
  Raw& u32(uint32_t v) { return put(v); }
  Raw& u64(uint64_t v) { return put(v); }
  Raw& str(const std::string& v) {
    put(uint64_t(v.size()));
    s_ += v;
    return *this;
  }
  Raw& bytes(const std::string& v) {
    s_ += v;
    return *this;
  }
  Raw& zeros(size_t n) {
    s_.append(n, '\0');
    return *this;
  }
  Raw& pad_to(size_t a) { return zeros((a - s_.size() % a) % a); }
  const std::string& data() const { return s_; }
  size_t size() const { return s_.size(); }

 private:
  std::string s_;
};

// A safetensors file from a header text and a data section, with the header length as given
// (or the true one).
inline std::string safetensors_bytes(const std::string& header, const std::string& data,
                                     std::optional<uint64_t> header_len = std::nullopt) {
  Raw r;
  r.u64(header_len.value_or(header.size())).bytes(header).bytes(data);
  return r.data();
}

// EXPECT that `status` failed and its full text contains every fragment.
inline void expect_error(const Status& status, std::initializer_list<std::string> fragments) {
  ASSERT_FALSE(status.is_ok()) << "expected an error containing '" << *fragments.begin() << "'";
  const std::string text = status.to_string();
  for (const auto& f : fragments) EXPECT_NE(text.find(f), std::string::npos) << "missing '" << f << "' in: " << text;
}

}  // namespace quill::testing
