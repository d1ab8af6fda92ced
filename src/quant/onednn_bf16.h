// bf16 x bf16 -> f32 GEMM through oneDNN's matmul (AMX / AVX512_BF16 kernels on CPUs that have
// them): y[M, N] = a[M, K] (bf16, row stride lda) . W[N, K]^T (bf16, the stored weight rows).
// oneDNN does this better than a hand kernel can, so Quill's bf16 "a8" path hands it over.
// Primitives are created once per shape and cached.
#pragma once

#include <cstdint>

#include "quill/status.h"

namespace quill::quant {

bool onednn_bf16_available();
Status onednn_bf16_matmul(const uint16_t* a, int64_t M, int64_t K, int64_t lda, const uint16_t* w, int64_t N, float* y);

}  // namespace quill::quant
