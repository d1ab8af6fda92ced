// The CUDA backend: Quill's ops on one NVIDIA GPU (sm_80 or later; built for sm_90a first).
//
// Today the Dispatcher hands every op HOST pointers, so each op copies its activations host ->
// device through a pinned staging buffer, enqueues the kernels (kernels.h, all on device
// pointers), copies the result back and synchronises: correct, and slow for the transfers. Weights
// are not copied per op: they stay resident (weight_cache.h). The next step is activations that
// live on the device for the whole forward (the plan's arena in device memory), after which the
// op methods call the same launchers without the copies.
//
// Numerics (bounds checked by tests/cuda/): linears run in bf16 with f32 accumulation (dense
// weights rounded to bf16 at upload, activations rounded to bf16 on the device); ternary linears
// use exact {-1, 0, 1} codes and f32 scales on bf16 activations; attention with head dim 64 / 128
// runs on the bf16 tensor cores (f32 softmax and accumulators), other head dims in plain f32;
// norms, activations and the gated residual are f32 throughout.
//
// Every failure comes back as a Status (ErrorCode::kDevice, with CUDA's error name and text), and
// the host outputs are written only after the device work succeeded, so the Dispatcher can rerun
// the op on the CPU. After an error that poisons the CUDA context, every later op fails at once.
#pragma once

#include <memory>
#include <string>

#include "runtime/op_backend.h"

namespace quill::cuda {

class CudaBackend final : public OpBackend {
 public:
  // Number of CUDA devices (0 when there is no driver or no device; never fails).
  static int device_count();
  // A backend on `device`, or a Status saying why there is none (no driver, no device, too old).
  static Result<std::unique_ptr<CudaBackend>> create(int device = 0);
  ~CudaBackend() override;

  const char* name() const override { return "cuda"; }
  Device device() const override { return Device::kCUDA; }
  bool supports(OpKind kind, const Tensor* weight) const override;

  Status linear(const float* x, int64_t M, const Tensor& W, const float* bias, float* y, const OpScratch& s) override;
  Status attention(const float* q, const float* k, const float* v, float* out, int64_t B, int64_t Sq, int64_t Skv,
                   int64_t H, int64_t Dh, float scale, const OpScratch& s) override;
  Status layer_norm_modulate(const float* x, float* y, int64_t B, int64_t S, int64_t D, float eps, const float* shift,
                             const float* scale, int64_t mod_stride) override;
  Status layer_norm(const float* x, float* y, int64_t rows, int64_t D, float eps, const float* w,
                    const float* b) override;
  Status rms_norm(const float* x, float* y, int64_t rows, int64_t D, float eps, const float* w) override;
  Status gelu_tanh(float* x, int64_t n) override;
  Status silu(float* x, int64_t n) override;
  Status gated_residual(float* x, const float* y, const float* gate, int64_t B, int64_t S, int64_t D,
                        int64_t gate_stride) override;

  // Diagnostics.
  std::string description() const;  // "NVIDIA H200 (sm_90, 132 SMs, 139.8 GiB)"
  size_t resident_weight_bytes() const;
  int64_t weight_uploads() const;
  // Free every resident weight (call when a model is unloaded; they re-upload on next use).
  void clear_weights();

 private:
  struct Impl;
  explicit CudaBackend(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace quill::cuda
