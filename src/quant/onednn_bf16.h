// bf16 x bf16 -> f32 GEMM through oneDNN's matmul (AMX / AVX512_BF16 kernels on CPUs that have
// them): y[M, N] = a[M, K] (bf16, row stride lda) . W[N, K]^T (bf16, the stored weight rows)
// (+ bias[N]). oneDNN does this better than a hand kernel can, so Quill's bf16 "a8" path hands it
// over. Primitives are created once per shape and cached; each weight is reordered ONCE into the
// layout the primitive prefers (blocked for AMX) and kept while the weight's storage lives (keyed
// by its address AND its owner, so freed and reused memory is never mistaken for a cached weight)
// -- a bf16 model holds a second, reordered copy of its weights in memory while it runs. A weight
// without an owner (`w_owner` null: lifetime unknown) is reordered on every call instead.
#pragma once

#include <cstdint>
#include <memory>

#include "quill/status.h"

namespace quill::quant {

bool onednn_bf16_available();  // built with oneDNN, and it has a bf16 matmul on this CPU
Status onednn_bf16_matmul(const uint16_t* a, int64_t M, int64_t K, int64_t lda, const uint16_t* w,
                          const std::shared_ptr<const void>& w_owner, int64_t N, const float* bias, float* y);

}  // namespace quill::quant
