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

// A style reference for the style encoder: read -> RGB -> plain resize to size x size (no
// aspect-preserving crop: non-square images are stretched) -> f32 [3, size, size] CHW with
// ImageNet normalisation ((x/255 - mean) / std, mean 0.485,0.456,0.406, std 0.229,0.224,0.225).
Result<Tensor> load_style_reference(const std::string& path, int size = 224);
// The same from pixels in memory (1 to 4 channels; the size and byte count are checked).
Result<Tensor> style_reference_from_image(const Image& image, int size = 224);
// The normalisation step alone, for an already-sized RGB image.
Tensor imagenet_normalize(const Image& rgb);

}  // namespace quill
