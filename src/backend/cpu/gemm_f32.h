// Dense f32 GEMM for the convolution fallback and the VAE's spatial attention, row-major:
//   C[M, N] = alpha * op(A)[M, K] . op(B)[K, N] + beta * C
// op(X) = X or X^T. Routed to OpenBLAS (cblas_sgemm) when built with it, else oneDNN's
// dnnl_sgemm, else a portable threaded loop. Not the transformer's linear (see ops.h).
#pragma once

#include <cstdint>

#include "core/thread_pool.h"

namespace quill::cpu {

enum class GemmImpl { kAuto, kPortable };

void gemm_f32(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, float alpha, const float* A, int64_t lda,
              const float* B, int64_t ldb, float beta, float* C, int64_t ldc, ThreadPool& pool,
              GemmImpl impl = GemmImpl::kAuto);

// Name of the library kAuto uses: "openblas", "onednn" or "portable".
const char* gemm_f32_backend();

}  // namespace quill::cpu
