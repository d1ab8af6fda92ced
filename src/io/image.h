// 8-bit images for the CLI (writing results, reading style references) and the style encoder.
// PNG and JPEG decoding needs libpng + libjpeg-turbo (QUILL_HAVE_IMAGE); without them the
// codec entry points return an `unsupported` Status, while conversions and resizing still work.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "quill/status.h"
#include "quill/tensor.h"

namespace quill {

// Interleaved HWC, 8 bits per channel; channels is 1 (gray), 2 (gray+alpha), 3 (RGB) or 4 (RGBA).
struct Image {
  int width = 0, height = 0, channels = 0;
  std::vector<uint8_t> pixels;  // width * height * channels bytes, rows top to bottom
};

// Decoders refuse larger images before allocating pixels (kOutOfRange).
inline constexpr int64_t kMaxImageSide = 16384;
inline constexpr int64_t kMaxImagePixels = int64_t{1} << 28;

// Checks width/height against the limits above; `what` names the image in the error.
Status check_image_size(int64_t width, int64_t height, const std::string& what);

// Writes an 8-bit PNG; channels 1 (gray), 2 (gray+alpha), 3 (RGB) or 4 (RGBA).
Status write_png(const std::string& path, const Image& img);

// The same PNG in memory.
Result<std::vector<uint8_t>> encode_png(const Image& img);

// Width and height from a PNG's IHDR or a JPEG's SOF marker, without decoding (a server checks
// its pixel limit before any decoder allocates). kInvalidFile when the header is not found.
struct ImageDimensions {
  int64_t width = 0, height = 0;
};
Result<ImageDimensions> peek_image_dimensions(const uint8_t* data, size_t size, const std::string& name);

// Reads a PNG or JPEG, chosen by magic bytes (never by extension). PNG: gray, gray+alpha, RGB,
// RGBA, palette (expanded to RGB or RGBA), 16-bit (scaled to 8-bit), low bit depths.
// JPEG: gray or RGB (YCbCr); CMYK/YCCK are refused as unsupported.
Result<Image> read_image(const std::string& path);
// The same from memory; `name` appears in error messages (a path, or "<memory>").
Result<Image> decode_image(const uint8_t* data, size_t size, const std::string& name);

// Luma with PIL's "L" weights (0.299, 0.587, 0.114, fixed point); alpha composited over white.
Image to_gray(const Image& img);
// RGB: gray replicated, alpha composited over white.
Image to_rgb(const Image& img);

// Matches PIL `Image.resize((w, h), Image.BILINEAR)` (Pillow 13) bit for bit on gray and RGB
// images: a triangle filter whose support grows with the downscale factor (antialiasing),
// separable, two passes with an 8-bit intermediate, in Pillow's pass order. Channels are filtered independently
// (PIL premultiplies alpha for RGBA; we do not). w and h must be >= 1.
Image resize_antialiased(const Image& img, int w, int h);

// How a style reference is laid out in the style encoder's square input (tools/line_data.py
// `style_image`, which trains the encoder; a model says which in style_encoder/style_layout.json).
struct StyleLayout {
  enum class Kind {
    kSquash,  // the whole image resized to size x size (non-square images are stretched)
    kWrap,    // the line at writing size, wrapped into rows (wrap_style_line)
  };
  Kind kind = Kind::kSquash;
  int row_height = 32;  // kWrap: the line's height in the square
};

// kWrap's square, gray: the image is converted to gray, resized to `row_height` (aspect kept, width
// round(w * row_height / h) >= 1, resize_antialiased), cut to its ink columns (any pixel darker than
// the median by more than 48; all columns when none is) and written into size / row_height rows of
// `size` pixels, continuing row by row like wrapped text; a line shorter than the square repeats
// after row_height / 4 columns of the median (paper) tone. size must be a multiple of row_height.
Result<Image> wrap_style_line(const Image& image, int size, int row_height);

// A style reference for the style encoder: read -> laid out as `layout` says -> RGB -> f32
// [3, size, size] CHW with ImageNet normalisation ((x/255 - mean) / std, mean 0.485,0.456,0.406,
// std 0.229,0.224,0.225).
Result<Tensor> load_style_reference(const std::string& path, int size = 224, StyleLayout layout = {});
// The same from pixels in memory (1 to 4 channels; the size and byte count are checked).
Result<Tensor> style_reference_from_image(const Image& image, int size = 224, StyleLayout layout = {});
// The normalisation step alone, for an already-sized RGB image.
Tensor imagenet_normalize(const Image& rgb);

}  // namespace quill
