#include "backend/cpu/gemm.h"

#include <atomic>

#if defined(QUILL_HAVE_OPENBLAS)
#include <cblas.h>
#endif

namespace quill::cpu {

namespace {

// Portable kernel: a column block of B (kNc rows of B, i.e. output columns) is packed k-major so
// the inner loop runs over kNc contiguous outputs; kMr rows of A share each packed load.
constexpr int64_t kNc = 32;
constexpr int64_t kKc = 256;
constexpr int64_t kMr = 4;

void pack_b(const float* B, int64_t ldb, int64_t n0, int64_t nn, int64_t k0, int64_t kk, float* Bp) {
  for (int64_t k = 0; k < kk; ++k)
    for (int64_t c = 0; c < kNc; ++c) Bp[k * kNc + c] = c < nn ? B[(n0 + c) * ldb + k0 + k] : 0.0f;
}

// C[rows, nn] (+)= A[rows, kk] . Bp, rows <= kMr.
void micro(const float* A, int64_t lda, int64_t rows, const float* Bp, int64_t kk, float* C, int64_t ldc, int64_t nn,
           bool add) {
  float acc[kMr][kNc] = {};
  for (int64_t k = 0; k < kk; ++k) {
    const float* b = Bp + k * kNc;
    for (int64_t r = 0; r < kMr; ++r) {
      const float a = r < rows ? A[r * lda + k] : 0.0f;
      for (int64_t c = 0; c < kNc; ++c) acc[r][c] += a * b[c];
    }
  }
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < nn; ++c) C[r * ldc + c] = add ? C[r * ldc + c] + acc[r][c] : acc[r][c];
}

}  // namespace

void sgemm_nt_portable(int64_t M, int64_t N, int64_t K, const float* A, int64_t lda, const float* B, int64_t ldb,
                       float* C, int64_t ldc, bool accumulate, ThreadPool& pool) {
  if (M <= 0 || N <= 0) return;
  const int64_t nblocks = (N + kNc - 1) / kNc;
  pool.parallel_for(nblocks, 1, [&](int64_t b0, int64_t b1) {
    alignas(64) float Bp[kKc * kNc];
    for (int64_t nb = b0; nb < b1; ++nb) {
      const int64_t n0 = nb * kNc;
      const int64_t nn = N - n0 < kNc ? N - n0 : kNc;
      if (K == 0 && !accumulate)
        for (int64_t r = 0; r < M; ++r)
          for (int64_t c = 0; c < nn; ++c) C[r * ldc + n0 + c] = 0.0f;
      for (int64_t k0 = 0; k0 < K; k0 += kKc) {
        const int64_t kk = K - k0 < kKc ? K - k0 : kKc;
        pack_b(B, ldb, n0, nn, k0, kk, Bp);
        const bool add = accumulate || k0 > 0;
        for (int64_t r0 = 0; r0 < M; r0 += kMr) {
          const int64_t rows = M - r0 < kMr ? M - r0 : kMr;
          micro(A + r0 * lda + k0, lda, rows, Bp, kk, C + r0 * ldc + n0, ldc, nn, add);
        }
      }
    }
  });
}

bool have_blas() {
#if defined(QUILL_HAVE_OPENBLAS)
  return true;
#else
  return false;
#endif
}

void sync_blas_threads(const ThreadPool& pool) {
#if defined(QUILL_HAVE_OPENBLAS)
  static std::atomic<int> current{0};
  const int n = pool.num_threads();
  if (current.load(std::memory_order_relaxed) != n) {
    openblas_set_num_threads(n);
    current.store(n, std::memory_order_relaxed);
  }
#else
  (void)pool;
#endif
}

void sgemm_nt(int64_t M, int64_t N, int64_t K, const float* A, int64_t lda, const float* B, int64_t ldb, float* C,
              int64_t ldc, bool accumulate, ThreadPool& pool) {
#if defined(QUILL_HAVE_OPENBLAS)
  if (M <= 0 || N <= 0) return;
  sync_blas_threads(pool);
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, blasint(M), blasint(N), blasint(K), 1.0f, A, blasint(lda), B,
              blasint(ldb), accumulate ? 1.0f : 0.0f, C, blasint(ldc));
#else
  sgemm_nt_portable(M, N, K, A, lda, B, ldb, C, ldc, accumulate, pool);
#endif
}

}  // namespace quill::cpu
