// Decoder output -> 8-bit pixels, as diffusers' VaeImageProcessor.postprocess(output_type="pil"):
// v = clamp(x * 0.5 + 0.5, 0, 1) in f32, then round(v * 255) with NumPy's round-half-to-even.
#pragma once

#include <cstdint>
#include <vector>

namespace quill {

// chw: one image [C, H, W] (C = 3 for RGB, 1 for grey) -> interleaved [H, W, C] bytes.
void image_to_u8(const float* chw, int64_t C, int64_t H, int64_t W, uint8_t* hwc);
std::vector<uint8_t> image_to_u8(const float* chw, int64_t C, int64_t H, int64_t W);

}  // namespace quill
