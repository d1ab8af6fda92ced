// Dense f32 GEMM, row-major with leading dimensions. Two entry points over one threading policy:
//   sgemm_nt  C[M, N] (+)= A[M, K] . B[N, K]^T        (the transformer's linear)
//   gemm_f32  C = alpha op(A) op(B) + beta C          (convolution fallback, VAE spatial attention)
// OpenBLAS when the build has it (single-threaded, output columns split over Quill's pool), else
// oneDNN's dnnl_sgemm for gemm_f32, else Quill's portable kernels.
#pragma once

#include <cstdint>

#include "core/thread_pool.h"

namespace quill::cpu {

// accumulate: C += A B^T instead of C = A B^T. Must not be called from inside a pool task: OpenBLAS
// runs its own threads, sized to match `pool` (see sync_blas_threads).
void sgemm_nt(int64_t M, int64_t N, int64_t K, const float* A, int64_t lda, const float* B, int64_t ldb, float* C,
              int64_t ldc, bool accumulate, ThreadPool& pool);

// The portable kernel, always built (tests compare it with OpenBLAS). Threaded with `pool`.
void sgemm_nt_portable(int64_t M, int64_t N, int64_t K, const float* A, int64_t lda, const float* B, int64_t ldb,
                       float* C, int64_t ldc, bool accumulate, ThreadPool& pool);

// Make OpenBLAS use as many threads as `pool`, so the two never oversubscribe the cores. Cheap
// when nothing changes; a no-op without OpenBLAS.
void sync_blas_threads(const ThreadPool& pool);

bool have_blas();

enum class GemmImpl { kAuto, kPortable };

// C[M, N] = alpha * op(A)[M, K] . op(B)[K, N] + beta * C, op(X) = X or X^T.
void gemm_f32(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, float alpha, const float* A, int64_t lda,
              const float* B, int64_t ldb, float beta, float* C, int64_t ldc, ThreadPool& pool,
              GemmImpl impl = GemmImpl::kAuto);

// Name of the library gemm_f32's kAuto uses: "openblas", "onednn" or "portable".
const char* gemm_f32_backend();

}  // namespace quill::cpu
