// Image dimensions from the header bytes alone (no libpng / libjpeg), for limits checked before decoding.
#include <cstring>

#include "io/image.h"

namespace quill {

namespace {
uint32_t be32(const uint8_t* p) { return uint32_t(p[0]) << 24 | uint32_t(p[1]) << 16 | uint32_t(p[2]) << 8 | p[3]; }
uint32_t be16(const uint8_t* p) { return uint32_t(p[0]) << 8 | p[1]; }
}  // namespace

Result<ImageDimensions> peek_image_dimensions(const uint8_t* data, size_t size, const std::string& name) {
  static const uint8_t kPng[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
  if (size >= 8 && std::memcmp(data, kPng, 8) == 0) {
    if (size < 24 || std::memcmp(data + 12, "IHDR", 4) != 0)
      return invalid_file("PNG without an IHDR header chunk").with_file(name);
    const uint32_t w = be32(data + 16), h = be32(data + 20);
    if (w > 0x7FFFFFFFu || h > 0x7FFFFFFFu)  // the PNG specification's limit for either side
      return invalid_file("PNG header claims ", w, "x", h, " pixels, past PNG's limit of 2^31 - 1 per side")
          .with_file(name);
    return ImageDimensions{w, h};
  }
  if (size >= 3 && data[0] == 0xFF && data[1] == 0xD8) {
    // Walk the marker segments to the first start-of-frame (SOF0-15 except DHT C4, JPG C8, DAC CC).
    size_t i = 2;
    while (i + 4 <= size) {
      if (data[i] != 0xFF) return invalid_file("corrupt JPEG: no marker at byte ", i).with_file(name);
      const uint8_t m = data[i + 1];
      if (m == 0xFF) {  // fill byte
        ++i;
        continue;
      }
      if (m == 0xD8 || m == 0x01 || (m >= 0xD0 && m <= 0xD7)) {  // markers without a length
        i += 2;
        continue;
      }
      const size_t len = be16(data + i + 2);
      if (len < 2) return invalid_file("corrupt JPEG: segment length ", len, " at byte ", i).with_file(name);
      if (m >= 0xC0 && m <= 0xCF && m != 0xC4 && m != 0xC8 && m != 0xCC) {
        if (i + 9 > size) break;
        return ImageDimensions{be16(data + i + 7), be16(data + i + 5)};
      }
      if (m == 0xD9 || m == 0xDA) break;  // end of image or start of scan before any frame header
      i += 2 + len;
    }
    return invalid_file("JPEG without a frame header (SOF) before its image data").with_file(name);
  }
  return invalid_file("not a PNG or JPEG (by its first bytes)").with_file(name);
}

}  // namespace quill
