// Dense f32 GEMM in the one shape linear needs: C[M, N] (+)= A[M, K] . B[N, K]^T, row-major with
// leading dimensions. OpenBLAS when the build has it, else Quill's portable blocked kernel.
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

}  // namespace quill::cpu
