// Bicubic resize of a channels-last image, equal to PyTorch's
//   F.interpolate(x, size=(Hout, Wout), mode="bicubic", align_corners=False, antialias=False)
// (x = src seen as [1, C, Hin, Win]): cubic convolution with A = -0.75, source coordinate
// (dst + 0.5) * in / out - 0.5 (not clamped at 0 for cubic), taps clamped to the edge, and
// separable weights computed in float as PyTorch's CPU kernel does. Used to fit a ViT position
// table to another patch grid (transformers' interpolate_pos_encoding).
#pragma once

#include <cstdint>

namespace quill::cpu {

// src [Hin, Win, C] -> dst [Hout, Wout, C]; all sizes >= 1.
void resize_bicubic(const float* src, int64_t Hin, int64_t Win, int64_t C, float* dst, int64_t Hout, int64_t Wout);

}  // namespace quill::cpu
