// The one place models call ops: the Dispatcher routes each op to the primary backend (CUDA, or a
// test double) when it supports the op and the GPU policy allows it, falls back to the CPU for
// that op when the primary fails, and counts every op per kind and per device that ran it, so
// diagnostics (`--diag`) and tests can prove which path ran.
//
// An op the primary answers with kUnsupported (it has no kernel for it, or not for these
// arguments) runs on the CPU and counts as a CPU run, not as a fallback. Any other error is a
// fallback: logged once per kind, counted, and the CPU result used.
//
// A Dispatcher is used by one thread at a time (its counters and scratch are not shared).
#pragma once

#include <array>
#include <cstdint>
#include <string>

#include "runtime/op_backend.h"

namespace quill {

// Counts of ops run, per kind and device, plus fallbacks (primary failed, CPU result used).
struct OpStats {
  std::array<std::array<uint64_t, 2>, size_t(OpKind::kCount)> runs{};
  std::array<uint64_t, size_t(OpKind::kCount)> fallbacks{};
  uint64_t total(Device d) const;
  uint64_t runs_of(OpKind k, Device d) const { return runs[size_t(k)][size_t(d)]; }
  // One line per kind that ran: "linear: cpu=12 cuda=0 fallback=0".
  std::string to_string() const;
  void reset() { *this = OpStats(); }
};

struct GpuPolicy;

class Dispatcher {
 public:
  // `cpu` must outlive the dispatcher; `primary` may be null (CPU only). The policy starts as the
  // process-wide one read from the environment (runtime/gpu_policy.h).
  explicit Dispatcher(OpBackend* cpu, OpBackend* primary = nullptr);

  void set_scratch(const OpScratch& s) { scratch_ = s; }
  void set_primary(OpBackend* primary) { primary_ = primary; }
  OpBackend* primary() const { return primary_; }
  // Tests install their own policy (which must outlive the dispatcher); null restores the process one.
  void set_policy(const GpuPolicy* policy);
  const GpuPolicy& policy() const { return *policy_; }
  const OpStats& stats() const { return stats_; }
  OpStats& stats() { return stats_; }

  // The ops: see OpBackend (runtime/op_backend.h) for shapes and semantics.
  Status linear(const float* x, int64_t M, const Tensor& W, const float* bias, float* y);
  Status attention(const float* q, const float* k, const float* v, float* out, int64_t B, int64_t Sq, int64_t Skv,
                   int64_t H, int64_t Dh, float scale);
  Status layer_norm_modulate(const float* x, float* y, int64_t B, int64_t S, int64_t D, float eps, const float* shift,
                             const float* scale, int64_t mod_stride);
  Status layer_norm(const float* x, float* y, int64_t rows, int64_t D, float eps, const float* w, const float* b);
  Status rms_norm(const float* x, float* y, int64_t rows, int64_t D, float eps, const float* w);
  Status gelu_tanh(float* x, int64_t n);
  Status gelu_erf(float* x, int64_t n);
  Status silu(float* x, int64_t n);
  Status relu(float* x, int64_t n);
  Status gated_residual(float* x, const float* y, const float* gate, int64_t B, int64_t S, int64_t D,
                        int64_t gate_stride);
  Status add(float* x, const float* y, int64_t rows, int64_t D, int64_t y_rows);
  Status swiglu(const float* gate, const float* up, int64_t ld, float* out, int64_t M, int64_t F);
  Status rope(float* x, int64_t B, int64_t S, int64_t H, int64_t Dh, const float* cos, const float* sin, int64_t pairs);
  Status conv2d(const float* x, int64_t N, int64_t H, int64_t W, const Conv2dWeights& c, float* y);
  Status group_norm(const float* x, float* y, int64_t N, int64_t C, int64_t HW, int64_t groups, float eps,
                    const float* gamma, const float* beta, bool silu);
  Status upsample_nearest2x(const float* x, float* y, int64_t planes, int64_t H, int64_t W);
  Status spatial_attention(const float* q, const float* k, const float* v, float* out, int64_t C, int64_t T,
                           float scale, float* scratch);
  Status resize_bicubic(const float* src, int64_t Hin, int64_t Win, int64_t C, float* dst, int64_t Hout, int64_t Wout);
  Status rope_half(float* x, int64_t B, int64_t S, int64_t H, int64_t Dh, const float* cos, const float* sin);
  Status masked_attention(const float* q, const float* k, const float* v, float* out, int64_t B, int64_t S, int64_t H,
                          int64_t Hkv, int64_t Dh, float scale, const int32_t* valid, bool causal, float* scratch);

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

}  // namespace quill
