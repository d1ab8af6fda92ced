// Row normalisations: one block per row, statistics as on the CPU (backend/cpu/norm.cpp): the f32
// mean m0, then a correction m1 = mean(x - m0) and the variance of (x - m0), so rows whose mean is
// large next to their spread keep their accuracy. The row is read three times; after the first
// read it sits in L1/L2, so the kernel stays bound by one pass over DRAM.
#include "backend/cuda/device_primitives.cuh"
#include "backend/cuda/kernels.h"

namespace quill::cuda {

namespace {

constexpr int kThreads = 256;

// shift/scale non-null: adaLN modulate with the batch row = row / S.
__global__ __launch_bounds__(kThreads) void layer_norm_kernel(const float* x, float* y, int64_t D, float eps,
                                                              const float* w, const float* b, const float* shift,
                                                              const float* scale, int64_t S, int64_t mod_stride) {
  __shared__ float scratch[32];
  const int64_t row = blockIdx.x;
  const float* xr = x + row * D;
  float* yr = y + row * D;
  const float inv_d = 1.0f / float(D);

  float s = 0.0f;
  for (int64_t i = threadIdx.x; i < D; i += kThreads) s += xr[i];
  const float m0 = block_sum<kThreads>(s, scratch) * inv_d;
  float s1 = 0.0f, s2 = 0.0f;
  for (int64_t i = threadIdx.x; i < D; i += kThreads) {
    const float d = xr[i] - m0;
    s1 += d;
    s2 += d * d;
  }
  const float m1 = block_sum<kThreads>(s1, scratch) * inv_d;
  float var = block_sum<kThreads>(s2, scratch) * inv_d - m1 * m1;
  var = var > 0.0f ? var : 0.0f;
  const float rstd = 1.0f / sqrtf(var + eps);

  const float* sh = shift ? shift + (row / S) * mod_stride : nullptr;
  const float* sc = scale ? scale + (row / S) * mod_stride : nullptr;
  for (int64_t i = threadIdx.x; i < D; i += kThreads) {
    float v = (xr[i] - m0 - m1) * rstd;
    if (w) v *= w[i];
    if (b) v += b[i];
    if (sc) v = v * (1.0f + sc[i]) + sh[i];
    yr[i] = v;
  }
}

__global__ __launch_bounds__(kThreads) void rms_norm_kernel(const float* x, float* y, int64_t D, float eps,
                                                            const float* w) {
  __shared__ float scratch[32];
  const int64_t row = blockIdx.x;
  const float* xr = x + row * D;
  float* yr = y + row * D;
  float s = 0.0f;
  for (int64_t i = threadIdx.x; i < D; i += kThreads) s += xr[i] * xr[i];
  const float rstd = 1.0f / sqrtf(block_sum<kThreads>(s, scratch) / float(D) + eps);
  for (int64_t i = threadIdx.x; i < D; i += kThreads) yr[i] = w ? xr[i] * rstd * w[i] : xr[i] * rstd;
}

// Rows go on grid.x (up to 2^31 - 1).
bool rows_fit(int64_t rows) { return rows > 0 && rows < (int64_t(1) << 31); }

}  // namespace

cudaError_t layer_norm(const float* x, float* y, int64_t rows, int64_t D, float eps, const float* w, const float* b,
                       cudaStream_t stream) {
  if (rows == 0 || D == 0) return cudaSuccess;
  if (!rows_fit(rows) || D < 0) return cudaErrorInvalidValue;
  layer_norm_kernel<<<unsigned(rows), kThreads, 0, stream>>>(x, y, D, eps, w, b, nullptr, nullptr, 1, 0);
  return cudaGetLastError();
}

cudaError_t layer_norm_modulate(const float* x, float* y, int64_t B, int64_t S, int64_t D, float eps,
                                const float* shift, const float* scale, int64_t mod_stride, cudaStream_t stream) {
  const int64_t rows = B * S;
  if (rows == 0 || D == 0) return cudaSuccess;
  if (!rows_fit(rows) || D < 0 || !shift || !scale) return cudaErrorInvalidValue;
  layer_norm_kernel<<<unsigned(rows), kThreads, 0, stream>>>(x, y, D, eps, nullptr, nullptr, shift, scale, S,
                                                             mod_stride);
  return cudaGetLastError();
}

cudaError_t rms_norm(const float* x, float* y, int64_t rows, int64_t D, float eps, const float* w,
                     cudaStream_t stream) {
  if (rows == 0 || D == 0) return cudaSuccess;
  if (!rows_fit(rows) || D < 0) return cudaErrorInvalidValue;
  rms_norm_kernel<<<unsigned(rows), kThreads, 0, stream>>>(x, y, D, eps, w);
  return cudaGetLastError();
}

}  // namespace quill::cuda
