// The CPU backend: every op, over the kernels in src/backend/cpu and src/quant. It is the
// fallback for every other backend and the reference the op suite compares them to.
#pragma once

#include "core/thread_pool.h"
#include "runtime/op_backend.h"

namespace quill {

class CpuBackend final : public OpBackend {
 public:
  // Settles OpenBLAS's kernel choice (cpu::ensure_blas_core) here, so a planned forward never does it.
  explicit CpuBackend(ThreadPool& pool);
  const char* name() const override { return "cpu"; }
  Device device() const override { return Device::kCPU; }
  bool supports(OpKind, const Tensor*) const override { return true; }
  ThreadPool& pool() { return pool_; }

  Status linear(const float* x, int64_t M, const Tensor& W, const float* bias, float* y, const OpScratch& s) override;
  Status attention(const float* q, const float* k, const float* v, float* out, int64_t B, int64_t Sq, int64_t Skv,
                   int64_t H, int64_t Dh, float scale, const OpScratch& s) override;
  Status layer_norm_modulate(const float* x, float* y, int64_t B, int64_t S, int64_t D, float eps, const float* shift,
                             const float* scale, int64_t mod_stride) override;
  Status layer_norm(const float* x, float* y, int64_t rows, int64_t D, float eps, const float* w,
                    const float* b) override;
  Status rms_norm(const float* x, float* y, int64_t rows, int64_t D, float eps, const float* w) override;
  Status gelu_tanh(float* x, int64_t n) override;
  Status gelu_erf(float* x, int64_t n) override;
  Status silu(float* x, int64_t n) override;
  Status relu(float* x, int64_t n) override;
  Status gated_residual(float* x, const float* y, const float* gate, int64_t B, int64_t S, int64_t D,
                        int64_t gate_stride) override;
  Status add(float* x, const float* y, int64_t rows, int64_t D, int64_t y_rows) override;
  Status swiglu(const float* gate, const float* up, int64_t ld, float* out, int64_t M, int64_t F) override;
  Status rope(float* x, int64_t B, int64_t S, int64_t H, int64_t Dh, const float* cos, const float* sin,
              int64_t pairs) override;
  Status conv2d(const float* x, int64_t N, int64_t H, int64_t W, const Conv2dWeights& c, float* y) override;
  Status group_norm(const float* x, float* y, int64_t N, int64_t C, int64_t HW, int64_t groups, float eps,
                    const float* gamma, const float* beta, bool silu) override;
  Status upsample_nearest2x(const float* x, float* y, int64_t planes, int64_t H, int64_t W) override;
  Status spatial_attention(const float* q, const float* k, const float* v, float* out, int64_t C, int64_t T,
                           float scale, float* scratch) override;
  Status rope_half(float* x, int64_t B, int64_t S, int64_t H, int64_t Dh, const float* cos, const float* sin) override;
  Status masked_attention(const float* q, const float* k, const float* v, float* out, int64_t B, int64_t S, int64_t H,
                          int64_t Hkv, int64_t Dh, float scale, const int32_t* valid, bool causal,
                          float* scratch) override;
  Status resize_bicubic(const float* src, int64_t Hin, int64_t Win, int64_t C, float* dst, int64_t Hout,
                        int64_t Wout) override;

 private:
  ThreadPool& pool_;
};

}  // namespace quill
