// Without libpng/libjpeg (QUILL_HAVE_IMAGE unset) the image_*.cpp codecs are not built; these
// stubs keep the API linkable and say clearly what is missing.
#ifndef QUILL_HAVE_IMAGE

#include "io/image_codecs.h"

namespace quill {
namespace detail {

Result<Image> decode_png(const uint8_t*, size_t, const std::string& name) {
  return unsupported("PNG support was not built (libpng/libjpeg not found at configure time)").with_file(name);
}
Result<Image> decode_jpeg(const uint8_t*, size_t, const std::string& name) {
  return unsupported("JPEG support was not built (libpng/libjpeg not found at configure time)").with_file(name);
}

}  // namespace detail

Status write_png(const std::string& path, const Image&) {
  return unsupported("PNG support was not built (libpng/libjpeg not found at configure time)").with_file(path);
}

Result<std::vector<uint8_t>> encode_png(const Image&) {
  return unsupported("PNG support was not built (libpng/libjpeg not found at configure time)");
}

}  // namespace quill

#endif  // QUILL_HAVE_IMAGE
