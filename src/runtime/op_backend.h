// The op interface every backend implements, and the dispatcher models call through.
//
// Models never call a kernel directly: they call the Dispatcher, which routes each op to the
// primary backend (CUDA, or a test double) when it supports the op and the op is enabled, and
// falls back to the CPU for that op when the primary fails. Every op is counted per kind and per
// device that ran it, so diagnostics (and tests) can prove which path ran.
//
// Backend contract (what makes the fallback safe): an op that returns an error must leave its
// inputs untouched, in-place buffers included (gelu_tanh, silu, gated_residual's x); its outputs
// may hold anything, since the CPU rewrites them completely.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <string>

#include "core/thread_pool.h"
#include "quill/status.h"
#include "quill/tensor.h"

namespace quill {

enum class OpKind : uint8_t {
  kLinear = 0,
  kAttention,
  kLayerNorm,
  kRmsNorm,
  kActivation,
  kResidual,
  kCount,
};
const char* op_kind_name(OpKind k);

// Scratch memory a plan hands to the ops (from its arena), so no op allocates.
struct OpScratch {
  float* linear = nullptr;
  size_t linear_floats = 0;
  float* attention = nullptr;
  size_t attention_floats = 0;
};

class OpBackend {
 public:
  virtual ~OpBackend() = default;
  virtual const char* name() const = 0;
  virtual Device device() const = 0;
  virtual bool supports(OpKind kind, const Tensor* weight) const = 0;

  virtual Status linear(const float* x, int64_t M, const Tensor& W, const float* bias, float* y,
                        const OpScratch& s) = 0;
  virtual Status attention(const float* q, const float* k, const float* v, float* out, int64_t B, int64_t Sq,
                           int64_t Skv, int64_t H, int64_t Dh, float scale, const OpScratch& s) = 0;
  virtual Status layer_norm_modulate(const float* x, float* y, int64_t B, int64_t S, int64_t D, float eps,
                                     const float* shift, const float* scale, int64_t mod_stride) = 0;
  virtual Status layer_norm(const float* x, float* y, int64_t rows, int64_t D, float eps, const float* w,
                            const float* b) = 0;
  virtual Status rms_norm(const float* x, float* y, int64_t rows, int64_t D, float eps, const float* w) = 0;
  virtual Status gelu_tanh(float* x, int64_t n) = 0;
  virtual Status silu(float* x, int64_t n) = 0;
  virtual Status gated_residual(float* x, const float* y, const float* gate, int64_t B, int64_t S, int64_t D,
                                int64_t gate_stride) = 0;
};

// Counts of ops run, per kind and device, plus fallbacks (primary failed, CPU result used).
struct OpStats {
  std::array<std::array<uint64_t, 2>, size_t(OpKind::kCount)> runs{};
  std::array<uint64_t, size_t(OpKind::kCount)> fallbacks{};
  uint64_t total(Device d) const;
  std::string to_string() const;  // one line per kind: "linear  cpu=12 cuda=0 fallback=0"
  void reset() { *this = OpStats(); }
};

struct GpuPolicy;

class Dispatcher {
 public:
  // `cpu` must outlive the dispatcher; `primary` may be null (CPU only). The policy starts as the
  // process-wide one read from the environment (runtime/gpu_policy.h).
  Dispatcher(OpBackend* cpu, OpBackend* primary = nullptr);

  void set_scratch(const OpScratch& s) { scratch_ = s; }
  void set_primary(OpBackend* primary) { primary_ = primary; }
  OpBackend* primary() const { return primary_; }
  // Tests install their own policy (which must outlive the dispatcher); null restores the process one.
  void set_policy(const GpuPolicy* policy);
  const GpuPolicy& policy() const { return *policy_; }
  const OpStats& stats() const { return stats_; }
  OpStats& stats() { return stats_; }

  Status linear(const float* x, int64_t M, const Tensor& W, const float* bias, float* y);
  Status attention(const float* q, const float* k, const float* v, float* out, int64_t B, int64_t Sq, int64_t Skv,
                   int64_t H, int64_t Dh, float scale);
  Status layer_norm_modulate(const float* x, float* y, int64_t B, int64_t S, int64_t D, float eps, const float* shift,
                             const float* scale, int64_t mod_stride);
  Status layer_norm(const float* x, float* y, int64_t rows, int64_t D, float eps, const float* w, const float* b);
  Status rms_norm(const float* x, float* y, int64_t rows, int64_t D, float eps, const float* w);
  Status gelu_tanh(float* x, int64_t n);
  Status silu(float* x, int64_t n);
  Status gated_residual(float* x, const float* y, const float* gate, int64_t B, int64_t S, int64_t D,
                        int64_t gate_stride);

 private:
  template <typename F>
  Status run(OpKind kind, const Tensor* weight, F&& call);

  OpBackend* cpu_;
  OpBackend* primary_;
  const GpuPolicy* policy_;
  OpScratch scratch_;
  OpStats stats_;
  std::array<bool, size_t(OpKind::kCount)> fallback_logged_{};
};

// The CPU backend over src/backend/cpu (and src/quant for block-quantized weights).
class CpuBackend final : public OpBackend {
 public:
  explicit CpuBackend(ThreadPool& pool) : pool_(pool) {}
  const char* name() const override { return "cpu"; }
  Device device() const override { return Device::kCPU; }
  bool supports(OpKind, const Tensor*) const override { return true; }
  ThreadPool& pool() { return pool_; }

  // Scratch the CPU ops need for a given weight / attention shape.
  static size_t linear_scratch_floats(const Tensor& W, const ThreadPool& pool);
  static size_t attention_scratch_floats(int64_t Skv, int64_t Dh, const ThreadPool& pool);

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

 private:
  ThreadPool& pool_;
};

}  // namespace quill
