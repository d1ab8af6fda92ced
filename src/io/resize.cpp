// Antialiased bilinear resize, written to reproduce PIL's Resample.c for 8-bit images: per output
// pixel a triangle filter over the input, support scaled by the downscale factor, weights
// normalised then quantised to 22-bit fixed point, one pass per axis with an 8-bit result each.
// Pillow before 13.0 always ran the horizontal pass first; results differ from it by at most 1.
#include <algorithm>
#include <cmath>

#include "io/image.h"

namespace quill {
namespace {

constexpr int kPrecisionBits = 32 - 8 - 2;

struct AxisWeights {
  int taps = 0;                 // weights per output position (fixed stride)
  std::vector<int> first;       // first input index per output position
  std::vector<int> count;       // number of input samples used
  std::vector<int32_t> weight;  // [out * taps + k], fixed point
};

AxisWeights axis_weights(int in_size, int out_size) {
  const double scale = double(in_size) / out_size;
  const double filter_scale = std::max(scale, 1.0);
  const double support = 1.0 * filter_scale;  // the triangle's support is 1 at scale 1
  AxisWeights a;
  a.taps = int(std::ceil(support)) * 2 + 1;
  a.first.resize(size_t(out_size));
  a.count.resize(size_t(out_size));
  a.weight.assign(size_t(out_size) * size_t(a.taps), 0);
  std::vector<double> w(static_cast<size_t>(a.taps));
  for (int o = 0; o < out_size; ++o) {
    const double center = (o + 0.5) * scale;
    const int lo = std::max(int(center - support + 0.5), 0);  // truncation, as PIL does
    const int hi = std::min(int(center + support + 0.5), in_size);
    const int n = hi - lo;
    double total = 0.0;
    for (int k = 0; k < n; ++k) {
      const double x = std::abs((k + lo - center + 0.5) / filter_scale);
      w[size_t(k)] = x < 1.0 ? 1.0 - x : 0.0;
      total += w[size_t(k)];
    }
    for (int k = 0; k < n; ++k) {
      const double v = total != 0.0 ? w[size_t(k)] / total : w[size_t(k)];
      const double f = v * double(1 << kPrecisionBits);
      a.weight[size_t(o) * size_t(a.taps) + size_t(k)] = int32_t(v < 0 ? f - 0.5 : f + 0.5);
    }
    a.first[size_t(o)] = lo;
    a.count[size_t(o)] = n;
  }
  return a;
}

inline uint8_t clip8(int32_t v) {
  if (v >= (int32_t{1} << kPrecisionBits << 8)) return 255;
  if (v <= 0) return 0;
  return uint8_t(v >> kPrecisionBits);
}

// Resample along x (stride between samples = channels) or y (stride = row bytes).
Image resample_x(const Image& in, int out_w) {
  const AxisWeights a = axis_weights(in.width, out_w);
  Image out{out_w, in.height, in.channels, {}};
  out.pixels.resize(size_t(out_w) * size_t(in.height) * size_t(in.channels));
  const int c = in.channels;
  for (int y = 0; y < in.height; ++y) {
    const uint8_t* row = in.pixels.data() + size_t(y) * size_t(in.width) * size_t(c);
    uint8_t* dst = out.pixels.data() + size_t(y) * size_t(out_w) * size_t(c);
    for (int o = 0; o < out_w; ++o) {
      const int32_t* w = a.weight.data() + size_t(o) * size_t(a.taps);
      const uint8_t* src = row + size_t(a.first[size_t(o)]) * size_t(c);
      for (int ch = 0; ch < c; ++ch) {
        int32_t acc = int32_t{1} << (kPrecisionBits - 1);
        for (int k = 0; k < a.count[size_t(o)]; ++k) acc += int32_t(src[size_t(k) * size_t(c) + size_t(ch)]) * w[k];
        dst[size_t(o) * size_t(c) + size_t(ch)] = clip8(acc);
      }
    }
  }
  return out;
}

Image resample_y(const Image& in, int out_h) {
  const AxisWeights a = axis_weights(in.height, out_h);
  Image out{in.width, out_h, in.channels, {}};
  const size_t row_bytes = size_t(in.width) * size_t(in.channels);
  out.pixels.resize(row_bytes * size_t(out_h));
  for (int o = 0; o < out_h; ++o) {
    const int32_t* w = a.weight.data() + size_t(o) * size_t(a.taps);
    const uint8_t* src = in.pixels.data() + size_t(a.first[size_t(o)]) * row_bytes;
    uint8_t* dst = out.pixels.data() + size_t(o) * row_bytes;
    for (size_t i = 0; i < row_bytes; ++i) {
      int32_t acc = int32_t{1} << (kPrecisionBits - 1);
      for (int k = 0; k < a.count[size_t(o)]; ++k) acc += int32_t(src[size_t(k) * row_bytes + i]) * w[k];
      dst[i] = clip8(acc);
    }
  }
  return out;
}

}  // namespace

Image resize_antialiased(const Image& img, int w, int h) {
  if (w < 1 || h < 1 || img.width < 1 || img.height < 1) return Image{std::max(w, 0), std::max(h, 0), img.channels, {}};
  // Pass order changes the 8-bit rounding in between, so it follows Pillow (13.0): the vertical
  // pass goes first only when the height shrinks by more than twice what the width shrinks by.
  const bool vertical_first = img.height - h > 0 && img.height - h > (img.width - w) * 2;
  if (vertical_first) {
    const Image mid = resample_y(img, h);
    return w != img.width ? resample_x(mid, w) : mid;
  }
  const Image tmp = w != img.width ? resample_x(img, w) : Image();
  const Image& mid = w != img.width ? tmp : img;
  return h != mid.height ? resample_y(mid, h) : mid;
}

}  // namespace quill
