// Nearest-neighbour 2x upsampling of NCHW f32 activations (F.interpolate(scale_factor=2.0,
// mode="nearest")): y[., 2h + a, 2w + b] = x[., h, w].
#pragma once

#include <cstdint>

#include "core/thread_pool.h"

namespace quill::cpu {

// x: [planes, H, W] -> y: [planes, 2H, 2W] (planes = N * C).
void upsample_nearest2x(const float* x, float* y, int64_t planes, int64_t H, int64_t W, ThreadPool& pool);

}  // namespace quill::cpu
