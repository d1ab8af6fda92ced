// Exact GELU, as PyTorch's nn.functional.gelu(approximate="none") and transformers' "gelu":
//   x * Phi(x) = 0.5 x (1 + erf(x / sqrt 2)).
// Kept beside ops.h (not in it) because only the ViT encoders use it.
#pragma once

#include <cstdint>

#include "core/thread_pool.h"

namespace quill::cpu {

void gelu_erf(float* x, int64_t n, ThreadPool& pool);  // in place

}  // namespace quill::cpu
