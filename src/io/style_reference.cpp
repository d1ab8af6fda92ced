// Style-reference preprocessing for the style encoder (ImageNet-normalised CHW float).
#include "io/image.h"

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

Result<Tensor> load_style_reference(const std::string& path, int size) {
  if (size < 1 || size > kMaxImageSide)
    return invalid_argument("style reference size must be in [1, ", kMaxImageSide, "], got ", size).with_file(path);
  QUILL_ASSIGN_OR_RETURN(Image img, read_image(path));
  auto t = style_reference_from_image(img, size);
  if (!t.is_ok()) return t.take_status().with_file(path);
  return t;
}

Result<Tensor> style_reference_from_image(const Image& img, int size) {
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
  return imagenet_normalize(resize_antialiased(to_rgb(img), size, size));
}

}  // namespace quill
