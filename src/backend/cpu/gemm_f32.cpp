#include "backend/cpu/gemm_f32.h"

#include <algorithm>
#include <vector>

#if defined(QUILL_HAVE_OPENBLAS)
#include <cblas.h>
#elif defined(QUILL_HAVE_DNNL)
#include <dnnl.h>
#endif

namespace quill::cpu {
namespace {

// Row i of C needs row i of op(A) and all of op(B). Rows are split over the pool; the inner loop
// runs along contiguous memory in each case so the compiler vectorises it.
void gemm_portable(bool ta, bool tb, int64_t M, int64_t N, int64_t K, float alpha, const float* A, int64_t lda,
                   const float* B, int64_t ldb, float beta, float* C, int64_t ldc, ThreadPool& pool) {
  pool.parallel_for(M, 1, [&](int64_t m0, int64_t m1) {
    std::vector<float> acc(static_cast<size_t>(N));
    for (int64_t i = m0; i < m1; ++i) {
      std::fill(acc.begin(), acc.end(), 0.0f);
      if (!tb) {
        for (int64_t k = 0; k < K; ++k) {
          const float a = ta ? A[k * lda + i] : A[i * lda + k];
          const float* b = B + k * ldb;
          for (int64_t j = 0; j < N; ++j) acc[size_t(j)] += a * b[j];
        }
      } else {
        for (int64_t j = 0; j < N; ++j) {
          const float* b = B + j * ldb;
          float s = 0.0f;
          if (!ta) {
            const float* a = A + i * lda;
            for (int64_t k = 0; k < K; ++k) s += a[k] * b[k];
          } else {
            for (int64_t k = 0; k < K; ++k) s += A[k * lda + i] * b[k];
          }
          acc[size_t(j)] = s;
        }
      }
      float* c = C + i * ldc;
      for (int64_t j = 0; j < N; ++j) c[j] = alpha * acc[size_t(j)] + (beta == 0.0f ? 0.0f : beta * c[j]);
    }
  });
}

}  // namespace

const char* gemm_f32_backend() {
#if defined(QUILL_HAVE_OPENBLAS)
  return "openblas";
#elif defined(QUILL_HAVE_DNNL)
  return "onednn";
#else
  return "portable";
#endif
}

void gemm_f32(bool ta, bool tb, int64_t M, int64_t N, int64_t K, float alpha, const float* A, int64_t lda,
              const float* B, int64_t ldb, float beta, float* C, int64_t ldc, ThreadPool& pool, GemmImpl impl) {
  if (M <= 0 || N <= 0) return;
  if (impl == GemmImpl::kPortable) {
    gemm_portable(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc, pool);
    return;
  }
#if defined(QUILL_HAVE_OPENBLAS)
  cblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans, blasint(M), blasint(N),
              blasint(K), alpha, A, blasint(lda), B, blasint(ldb), beta, C, blasint(ldc));
#elif defined(QUILL_HAVE_DNNL)
  if (dnnl_sgemm(ta ? 'T' : 'N', tb ? 'T' : 'N', M, N, K, alpha, A, lda, B, ldb, beta, C, ldc) != dnnl_success)
    gemm_portable(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc, pool);
#else
  gemm_portable(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc, pool);
#endif
}

}  // namespace quill::cpu
