#include "backend/cpu/gemm.h"

#include "backend/cpu/blas_core.h"

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <string>
#include <vector>

#if defined(QUILL_HAVE_OPENBLAS)
#include <cblas.h>
#elif defined(QUILL_HAVE_DNNL)
#include <dnnl.h>
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

// Two ways to use OpenBLAS's threads: let it thread each call itself ("openblas"), or keep it
// single-threaded and split N across Quill's pool ("pool", the default). With "openblas", its
// workers spin (sched_yield) after every call and steal the cores from Quill's own threaded ops
// (attention, norms) that run between GEMMs; "pool" keeps one set of threads for everything.
// QUILL_BLAS_THREADS=openblas switches back for A/B checks.
namespace {
bool blas_split_in_pool() {
  static const bool split = [] {
    const char* e = std::getenv("QUILL_BLAS_THREADS");
    return !(e && std::string(e) == "openblas");
  }();
  return split;
}
}  // namespace

void sync_blas_threads(const ThreadPool& pool) {
#if defined(QUILL_HAVE_OPENBLAS)
  ensure_blas_core();
  static std::atomic<int> current{0};
  const int n = blas_split_in_pool() ? 1 : pool.num_threads();
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
  const float beta = accumulate ? 1.0f : 0.0f;
  const int64_t T = pool.num_threads();
  if (!blas_split_in_pool() || T == 1 || N < 32 * T) {
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, blasint(M), blasint(N), blasint(K), 1.0f, A, blasint(lda), B,
                blasint(ldb), beta, C, blasint(ldc));
    return;
  }
  // One slice of output columns per thread, 16-aligned so vector stores stay aligned.
  const int64_t chunk = (N / T + 15) / 16 * 16;
  pool.run_on_all([&](int t) {
    const int64_t n0 = int64_t(t) * chunk;
    const int64_t nn = std::min(N, n0 + chunk) - n0;
    if (nn <= 0) return;
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, blasint(M), blasint(nn), blasint(K), 1.0f, A, blasint(lda),
                B + n0 * ldb, blasint(ldb), beta, C + n0, blasint(ldc));
  });
#else
  sgemm_nt_portable(M, N, K, A, lda, B, ldb, C, ldc, accumulate, pool);
#endif
}

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
  // Same policy as sgemm_nt: OpenBLAS stays single-threaded (sync_blas_threads) and each pool
  // thread takes a slice of output columns; op(B)'s columns start at B + n0 (or row n0 if B^T).
  sync_blas_threads(pool);
  const int64_t T = pool.num_threads();
  const auto call = [&](int64_t n0, int64_t nn) {
    cblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans, blasint(M), blasint(nn),
                blasint(K), alpha, A, blasint(lda), tb ? B + n0 * ldb : B + n0, blasint(ldb), beta, C + n0,
                blasint(ldc));
  };
  if (!blas_split_in_pool() || T == 1 || N < 32 * T) {
    call(0, N);
    return;
  }
  const int64_t chunk = (N / T + 15) / 16 * 16;
  pool.run_on_all([&](int t) {
    const int64_t n0 = int64_t(t) * chunk;
    const int64_t nn = std::min(N, n0 + chunk) - n0;
    if (nn > 0) call(n0, nn);
  });
#elif defined(QUILL_HAVE_DNNL)
  if (dnnl_sgemm(ta ? 'T' : 'N', tb ? 'T' : 'N', M, N, K, alpha, A, lda, B, ldb, beta, C, ldc) != dnnl_success)
    gemm_portable(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc, pool);
#else
  gemm_portable(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc, pool);
#endif
}

}  // namespace quill::cpu
