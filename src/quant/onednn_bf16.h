// bf16 x bf16 -> f32 GEMM through oneDNN's matmul (AMX / AVX512_BF16 kernels on CPUs that have
// them): y[M, N] = a[M, K] (bf16, row stride lda) . W[N, K]^T (bf16, the stored weight rows)
// (+ bias[N]). oneDNN does this better than a hand kernel can, so Quill's bf16 "a8" path hands it
// over. Primitives are created once per shape and cached; each weight is reordered ONCE into the
// layout the primitive prefers (blocked for AMX) and kept, keyed by its address -- so a bf16
// model holds a second, reordered copy of its weights in memory while it runs.
#pragma once

#include <cstdint>

#include "quill/status.h"

namespace quill::quant {

bool onednn_bf16_available();
Status onednn_bf16_matmul(const uint16_t* a, int64_t M, int64_t K, int64_t lda, const uint16_t* w, int64_t N,
                          const float* bias, float* y);
// Drops the reordered weights (for tests and for callers that free weights).
void onednn_bf16_clear_cache();

}  // namespace quill::quant
