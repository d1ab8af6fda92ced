// libFuzzer target: PNG/JPEG decoding (libpng, libjpeg-turbo behind Quill's error handling) on
// arbitrary bytes, then the conversions and a resize of whatever decoded.
#include <cstdint>

#include "fuzz_util.h"
#include "io/image.h"

using namespace quill;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto img = decode_image(data, size, "fuzz.img");
  if (!img) {
    (void)img.status().to_string();
    return 0;
  }
  const Image& im = *img;
  if (im.width < 1 || im.height < 1 || im.width > kMaxImageSide || im.height > kMaxImageSide)
    fuzz::fail("decoded size outside the limits");
  if (im.channels < 1 || im.channels > 4) fuzz::fail("decoded channel count outside 1..4");
  if (im.pixels.size() != size_t(im.width) * size_t(im.height) * size_t(im.channels))
    fuzz::fail("pixel buffer size disagrees with the dimensions");
  if (size_t(im.width) * size_t(im.height) > (size_t{1} << 22)) return 0;  // keep iterations fast
  const Image rgb = to_rgb(im);
  const Image gray = to_gray(im);
  if (rgb.pixels.size() != gray.pixels.size() * 3) fuzz::fail("to_rgb / to_gray sizes disagree");
  const Image small = resize_antialiased(rgb, 7, 5);
  if (small.pixels.size() != 7 * 5 * 3) fuzz::fail("resize output size");
  return 0;
}
