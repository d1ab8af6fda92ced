// Conversions and element-wise ops: grid-stride loops, f32 math matching the CPU formulas
// (backend/cpu/activation.cpp), so they agree to a few ulp.
#include "backend/cuda/device_primitives.cuh"
#include "backend/cuda/kernels.h"

namespace quill::cuda {

namespace {

constexpr int kThreads = 256;

__global__ void f32_to_bf16_kernel(const float* in, __nv_bfloat16* out, int64_t n) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x)
    out[i] = __float2bfloat16_rn(in[i]);
}

__global__ void f16_to_bf16_kernel(const __half* in, __nv_bfloat16* out, int64_t n) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x)
    out[i] = __float2bfloat16_rn(__half2float(in[i]));
}

__global__ void add_bias_kernel(float* y, const float* bias, int64_t M, int64_t N) {
  const int64_t total = M * N;
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < total; i += int64_t(gridDim.x) * blockDim.x)
    y[i] += bias[i % N];
}

// 0.5 x (1 + tanh(u)) written as x / (1 + exp(-2u)): no cancellation for negative x.
__global__ void gelu_tanh_kernel(float* x, int64_t n) {
  const float k0 = 0.7978845608028654f;  // sqrt(2 / pi)
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x) {
    const float v = x[i];
    const float u = k0 * (v + 0.044715f * v * v * v);
    x[i] = v / (1.0f + expf(-2.0f * u));
  }
}

__global__ void silu_kernel(float* x, int64_t n) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x) {
    const float v = x[i];
    x[i] = v / (1.0f + expf(-v));
  }
}

__global__ void gated_residual_kernel(float* x, const float* y, const float* gate, int64_t S, int64_t D,
                                      int64_t gate_stride, int64_t total) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < total;
       i += int64_t(gridDim.x) * blockDim.x) {
    const int64_t row = i / D, col = i - row * D;
    x[i] += gate[(row / S) * gate_stride + col] * y[i];
  }
}

}  // namespace

cudaError_t f32_to_bf16(const float* in, uint16_t* out, int64_t n, cudaStream_t stream) {
  if (n <= 0) return cudaSuccess;
  f32_to_bf16_kernel<<<grid_for(n, kThreads), kThreads, 0, stream>>>(in, reinterpret_cast<__nv_bfloat16*>(out), n);
  return cudaGetLastError();
}

cudaError_t f16_to_bf16(const uint16_t* in, uint16_t* out, int64_t n, cudaStream_t stream) {
  if (n <= 0) return cudaSuccess;
  f16_to_bf16_kernel<<<grid_for(n, kThreads), kThreads, 0, stream>>>(reinterpret_cast<const __half*>(in),
                                                                      reinterpret_cast<__nv_bfloat16*>(out), n);
  return cudaGetLastError();
}

cudaError_t add_bias(float* y, const float* bias, int64_t M, int64_t N, cudaStream_t stream) {
  if (M * N <= 0) return cudaSuccess;
  add_bias_kernel<<<grid_for(M * N, kThreads), kThreads, 0, stream>>>(y, bias, M, N);
  return cudaGetLastError();
}

cudaError_t gelu_tanh(float* x, int64_t n, cudaStream_t stream) {
  if (n <= 0) return cudaSuccess;
  gelu_tanh_kernel<<<grid_for(n, kThreads), kThreads, 0, stream>>>(x, n);
  return cudaGetLastError();
}

cudaError_t silu(float* x, int64_t n, cudaStream_t stream) {
  if (n <= 0) return cudaSuccess;
  silu_kernel<<<grid_for(n, kThreads), kThreads, 0, stream>>>(x, n);
  return cudaGetLastError();
}

cudaError_t gated_residual(float* x, const float* y, const float* gate, int64_t B, int64_t S, int64_t D,
                           int64_t gate_stride, cudaStream_t stream) {
  const int64_t total = B * S * D;
  if (total <= 0) return cudaSuccess;
  gated_residual_kernel<<<grid_for(total, kThreads), kThreads, 0, stream>>>(x, y, gate, S, D, gate_stride, total);
  return cudaGetLastError();
}

}  // namespace quill::cuda
