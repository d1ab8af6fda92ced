// Style-reference preprocessing for the style encoder (ImageNet-normalised CHW float).
#include "io/image.h"

#include <algorithm>

namespace quill {

Tensor imagenet_normalize(const Image& rgb) {
  static constexpr float kMean[3] = {0.485f, 0.456f, 0.406f};
  static constexpr float kStd[3] = {0.229f, 0.224f, 0.225f};
  const int64_t hw = int64_t(rgb.width) * rgb.height;
  Tensor t = Tensor::empty(DType::kF32, Shape{3, rgb.height, rgb.width});
  float* out = t.data_as<float>();
  for (int c = 0; c < 3; ++c)
    for (int64_t i = 0; i < hw; ++i)
      out[c * hw + i] = (float(rgb.pixels[size_t(i * 3 + c)]) / 255.0f - kMean[c]) / kStd[c];
  return t;
}

Result<Tensor> load_style_reference(const std::string& path, int size, StyleLayout layout) {
  if (size < 1 || size > kMaxImageSide)
    return invalid_argument("style reference size must be in [1, ", kMaxImageSide, "], got ", size).with_file(path);
  QUILL_ASSIGN_OR_RETURN(Image img, read_image(path));
  auto t = style_reference_from_image(img, size, layout);
  if (!t.is_ok()) return t.take_status().with_file(path);
  return t;
}

Result<Tensor> style_reference_from_image(const Image& img, int size, StyleLayout layout) {
  if (size < 1 || size > kMaxImageSide)
    return invalid_argument("style reference size must be in [1, ", kMaxImageSide, "], got ", size);
  if (img.width < 1 || img.height < 1 || img.width > kMaxImageSide || img.height > kMaxImageSide)
    return invalid_argument("style image is ", img.width, "x", img.height, "; each side must be in [1, ", kMaxImageSide,
                            "]");
  if (img.channels < 1 || img.channels > 4)
    return invalid_argument("style image has ", img.channels, " channels (expected 1 gray, 2 gray + alpha, 3 RGB or ",
                            "4 RGBA)");
  const size_t want = size_t(img.width) * size_t(img.height) * size_t(img.channels);
  if (img.pixels.size() != want)
    return invalid_argument("style image holds ", img.pixels.size(), " bytes, expected ", img.width, " x ", img.height,
                            " x ", img.channels, " = ", want);
  if (layout.kind == StyleLayout::Kind::kSquash) return imagenet_normalize(resize_antialiased(to_rgb(img), size, size));
  QUILL_ASSIGN_OR_RETURN(Image square, wrap_style_line(img, size, layout.row_height));
  return imagenet_normalize(to_rgb(square));
}

Result<Image> wrap_style_line(const Image& img, int size, int row_height) {
  if (row_height < 1 || size < row_height || size % row_height != 0)
    return invalid_argument("style layout: the square's size (", size, ") must be a positive multiple of the row ",
                            "height (", row_height, ")");
  Image line = to_gray(img);
  if (line.height != row_height) {
    const int64_t w = std::max<int64_t>(1, (int64_t(line.width) * row_height + line.height / 2) / line.height);
    if (w > kMaxImageSide)
      return invalid_argument("style image is ", img.width, "x", img.height, "; at a height of ", row_height,
                              " it would be ", w, " pixels wide (at most ", kMaxImageSide, ")");
    line = resize_antialiased(line, int(w), row_height);
  }
  std::vector<uint8_t> sorted = line.pixels;
  auto mid = sorted.begin() + std::ptrdiff_t((sorted.size() - 1) / 2);
  std::nth_element(sorted.begin(), mid, sorted.end());
  const int paper = *mid;
  int x0 = line.width, x1 = 0;  // ink columns [x0, x1)
  for (int y = 0; y < line.height; ++y)
    for (int x = 0; x < line.width; ++x)
      if (int(line.pixels[size_t(y) * size_t(line.width) + size_t(x)]) < paper - 48) {
        x0 = std::min(x0, x);
        x1 = std::max(x1, x + 1);
      }
  if (x0 >= x1) x0 = 0, x1 = line.width;
  const int64_t ink = x1 - x0, period = ink + row_height / 4;
  Image out{size, size, 1, std::vector<uint8_t>(size_t(size) * size_t(size))};
  for (int r = 0; r < size / row_height; ++r)
    for (int y = 0; y < row_height; ++y) {
      uint8_t* dst = out.pixels.data() + (size_t(r) * row_height + y) * size_t(size);
      const uint8_t* src = line.pixels.data() + size_t(y) * size_t(line.width) + size_t(x0);
      for (int x = 0; x < size; ++x) {
        const int64_t i = (int64_t(r) * size + x) % period;
        dst[x] = i < ink ? src[i] : uint8_t(paper);
      }
    }
  return out;
}

}  // namespace quill
