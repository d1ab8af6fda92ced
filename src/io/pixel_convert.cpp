// Channel conversions between gray, gray+alpha, RGB and RGBA (8-bit, interleaved).
#include "io/image.h"

namespace quill {
namespace {

// c over white with straight alpha a, rounded: (c*a + 255*(255-a)) / 255.
inline uint8_t over_white(int c, int a) { return uint8_t((c * a + 255 * (255 - a) + 127) / 255); }

// PIL's fixed-point ITU-R 601-2 luma (Convert.c, L24): same weights, same rounding.
inline uint8_t luma(int r, int g, int b) { return uint8_t((r * 19595 + g * 38470 + b * 7471 + 0x8000) >> 16); }

Image with_channels(const Image& img, int channels) {
  Image out;
  out.width = img.width;
  out.height = img.height;
  out.channels = channels;
  out.pixels.resize(size_t(img.width) * size_t(img.height) * size_t(channels));
  return out;
}

}  // namespace

Image to_rgb(const Image& img) {
  if (img.channels == 3) return img;
  Image out = with_channels(img, 3);
  const size_t n = size_t(img.width) * size_t(img.height);
  const uint8_t* s = img.pixels.data();
  uint8_t* d = out.pixels.data();
  for (size_t i = 0; i < n; ++i, d += 3) {
    switch (img.channels) {
      case 1:
        d[0] = d[1] = d[2] = s[i];
        break;
      case 2:
        d[0] = d[1] = d[2] = over_white(s[2 * i], s[2 * i + 1]);
        break;
      case 4: {
        const uint8_t* p = s + 4 * i;
        d[0] = over_white(p[0], p[3]);
        d[1] = over_white(p[1], p[3]);
        d[2] = over_white(p[2], p[3]);
        break;
      }
      default:
        break;
    }
  }
  return out;
}

Image to_gray(const Image& img) {
  if (img.channels == 1) return img;
  if (img.channels == 2) {
    Image out = with_channels(img, 1);
    for (size_t i = 0; i < out.pixels.size(); ++i) out.pixels[i] = over_white(img.pixels[2 * i], img.pixels[2 * i + 1]);
    return out;
  }
  const Image rgb = img.channels == 3 ? Image() : to_rgb(img);
  const Image& src = img.channels == 3 ? img : rgb;
  Image out = with_channels(img, 1);
  for (size_t i = 0; i < out.pixels.size(); ++i) {
    const uint8_t* p = src.pixels.data() + 3 * i;
    out.pixels[i] = luma(p[0], p[1], p[2]);
  }
  return out;
}

}  // namespace quill
