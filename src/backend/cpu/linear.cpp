// linear: y[M, N] = x[M, K] . W[N, K]^T + b.
//
//   f32 W          one sgemm (bias pre-filled into y, sgemm accumulates onto it).
//   f16 / bf16 W   panels of kPanelRows rows of W are decoded to f32 into the caller's scratch
//                  (by the pool), then one sgemm per panel writes y[:, panel]; the weights are
//                  never expanded whole.
//   M <= kSmallM   (16, any dtype) a direct kernel reads each weight once, threaded over N: at these
//                  sizes the GEMM is memory-bound and decoding or packing would only add traffic
//                  (N = 9216, K = 1536, 2 threads: M = 2 f32 1.1 ms vs sgemm 3.4 ms; M = 16 3.7 vs 4.7).
#include "backend/cpu/ops.h"

#include <cassert>
#include <cstring>

#include "backend/cpu/gemm.h"
#include "backend/cpu/kernel_table.h"

namespace quill::cpu {

namespace {

constexpr int64_t kSmallM = kLinearSmallM;
// Panel size in decoded floats (16 MB). Big on purpose: OpenBLAS re-packs x on every call, so
// narrow panels cost throughput (measured at M = 1024, K = N = 3072 on 2 cores: 128-row panels
// 269 GFLOP/s, 512 rows 357, whole 360; decode itself is ~5% of the time).
constexpr int64_t kPanelFloats = int64_t(1) << 22;

int64_t panel_rows(int64_t N, int64_t K) {
  int64_t rows = K > 0 ? kPanelFloats / K : N;
  rows = rows < 16 ? 16 : rows / 16 * 16;
  return rows < N ? rows : N;
}

void fill_bias(float* y, int64_t M, int64_t N, const float* bias, ThreadPool& pool) {
  pool.parallel_for(M, (1 << 14) / (N > 0 ? N : 1) + 1, [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) std::memcpy(y + r * N, bias, size_t(N) * sizeof(float));
  });
}

}  // namespace

namespace scalar {

namespace {

template <DType T>
void decode(const void* src, float* dst, int64_t n) {
  convert_to_f32(T, src, dst, n);
}

template <DType T>
void gemv(const float* x, int64_t M, int64_t K, const void* W, const float* bias, int64_t n0, int64_t n1, float* y,
          int64_t ldy) {
  constexpr int64_t kChunk = 256;
  float w[kChunk];
  for (int64_t n = n0; n < n1; ++n) {
    float acc[kSmallM] = {};
    for (int64_t k0 = 0; k0 < K; k0 += kChunk) {
      const int64_t kk = K - k0 < kChunk ? K - k0 : kChunk;
      const size_t at = size_t(n * K + k0) * size_t(dtype_traits(T).block_bytes);
      convert_to_f32(T, static_cast<const char*>(W) + at, w, kk);
      for (int64_t m = 0; m < M; ++m) {
        float s = 0.0f;
        for (int64_t k = 0; k < kk; ++k) s += x[m * K + k0 + k] * w[k];
        acc[m] += s;
      }
    }
    for (int64_t m = 0; m < M; ++m) y[m * ldy + n] = acc[m] + (bias ? bias[n] : 0.0f);
  }
}

}  // namespace

LinearKernels linear_kernels(DType dtype) {
  if (dtype == DType::kF32) return {nullptr, gemv<DType::kF32>};
  if (dtype == DType::kF16) return {decode<DType::kF16>, gemv<DType::kF16>};
  if (dtype == DType::kBF16) return {decode<DType::kBF16>, gemv<DType::kBF16>};
  return {};
}

}  // namespace scalar

size_t linear_scratch_floats(const Tensor& W, const ThreadPool& pool) {
  (void)pool;  // one panel, decoded cooperatively by the pool
  if (W.dtype() == DType::kF32 || W.rank() != 2) return 0;
  return size_t(panel_rows(W.dim(0), W.dim(1)) * W.dim(1));
}

void linear(const float* x, int64_t M, const Tensor& W, const float* bias, float* y, float* scratch, ThreadPool& pool) {
  assert(W.rank() == 2 && W.is_contiguous());
  assert(W.dtype() == DType::kF32 || W.dtype() == DType::kF16 || W.dtype() == DType::kBF16);
  const int64_t N = W.dim(0), K = W.dim(1);
  if (M <= 0 || N <= 0) return;
  const LinearKernels& kernels = kernel_table().linear[size_t(W.dtype())];

  if (M <= kSmallM) {
    const GemvFn gemv = kernels.gemv;
    // ~64K multiply-adds per task.
    const int64_t grain = (int64_t(1) << 16) / (K * M > 0 ? K * M : 1) + 1;
    pool.parallel_for(N, grain, [&](int64_t n0, int64_t n1) { gemv(x, M, K, W.data(), bias, n0, n1, y, N); });
    return;
  }

  if (bias) fill_bias(y, M, N, bias, pool);
  if (W.dtype() == DType::kF32) {
    sgemm_nt(M, N, K, x, K, W.data_as<const float>(), K, y, N, bias != nullptr, pool);
    return;
  }

  assert(scratch != nullptr);
  const DecodeFn decode = kernels.decode;
  const int64_t rows = panel_rows(N, K);
  const int64_t elem = dtype_traits(W.dtype()).block_bytes;
  const char* wbytes = static_cast<const char*>(W.data());
  for (int64_t n0 = 0; n0 < N; n0 += rows) {
    const int64_t nn = N - n0 < rows ? N - n0 : rows;
    pool.parallel_for(nn, 8, [&](int64_t r0, int64_t r1) {
      decode(wbytes + size_t((n0 + r0) * K * elem), scratch + r0 * K, (r1 - r0) * K);
    });
    sgemm_nt(M, nn, K, x, K, scratch, K, y + n0, N, bias != nullptr, pool);
  }
}

}  // namespace quill::cpu
