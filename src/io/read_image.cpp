// read_image: load the file, then pick the decoder by magic bytes. Lives outside image_*.cpp so
// the file checks and the "not a PNG/JPEG" error work even in builds without the codecs.
#include <sys/stat.h>
#include <cerrno>
#include <cstdio>
#include <cstring>

#include "io/image.h"

#include "core/input_files.h"
#include "io/image_codecs.h"

namespace quill {

Status check_image_size(int64_t width, int64_t height, const std::string& what) {
  if (width < 1 || height < 1) return invalid_file("image has no pixels (", width, "x", height, ")").with_file(what);
  if (width > kMaxImageSide || height > kMaxImageSide || width * height > kMaxImagePixels)
    return out_of_range("image is ", width, "x", height, ", larger than Quill accepts (at most ", kMaxImageSide,
                        " per side and ", kMaxImagePixels, " pixels)")
        .with_file(what);
  return Status::ok();
}

Result<Image> decode_image(const uint8_t* data, size_t size, const std::string& name) {
  static constexpr uint8_t kPng[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
  if (size == 0) return invalid_file("image file is empty (0 bytes)").with_file(name);
  if (size >= 8 && std::memcmp(data, kPng, 8) == 0) return detail::decode_png(data, size, name);
  if (size >= 3 && data[0] == 0xff && data[1] == 0xd8 && data[2] == 0xff) return detail::decode_jpeg(data, size, name);
  return invalid_file("not a PNG or JPEG image (unrecognised magic bytes)").with_file(name);
}

Result<Image> read_image(const std::string& path) {
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (!f) {
    const int e = errno;
    if (e == ENOENT) return not_found("image file not found").with_file(path);
    return io_error("cannot open image: ", std::strerror(e)).with_file(path);
  }
  struct stat st {};
  if (fstat(fileno(f), &st) != 0 || !S_ISREG(st.st_mode)) {
    std::fclose(f);
    return io_error("not a regular file").with_file(path);
  }
  note_input_file(uint64_t(st.st_dev), uint64_t(st.st_ino));
  // Compressed images are far smaller than the pixel limit; this only stops absurd inputs.
  constexpr int64_t kMaxFileBytes = int64_t{1} << 30;
  if (st.st_size > kMaxFileBytes) {
    std::fclose(f);
    return out_of_range("image file is ", st.st_size, " bytes, more than the 1 GiB Quill reads").with_file(path);
  }
  std::vector<uint8_t> bytes(static_cast<size_t>(st.st_size));
  const size_t got = bytes.empty() ? 0 : std::fread(bytes.data(), 1, bytes.size(), f);
  const bool read_error = std::ferror(f) != 0;
  std::fclose(f);
  if (read_error || got != bytes.size()) return io_error("could not read the whole image file").with_file(path);
  return decode_image(bytes.data(), bytes.size(), path);
}

}  // namespace quill
