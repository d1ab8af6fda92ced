// Internal: the per-format decoders behind decode_image. Defined in image_png.cpp and
// image_jpeg.cpp, or as `unsupported` stubs in no_image_codecs.cpp without the libraries.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "io/image.h"

namespace quill::detail {

Result<Image> decode_png(const uint8_t* data, size_t size, const std::string& name);
Result<Image> decode_jpeg(const uint8_t* data, size_t size, const std::string& name);

}  // namespace quill::detail
