// A host-side test double for an accelerator backend: it claims a device (CUDA by default), runs
// the ops it does not fail through the CPU ops, and fails the kinds a test chooses with a device
// error. Before failing it poisons the op's separate outputs with NaN (a real GPU may leave
// garbage there) and leaves in-place buffers untouched, as the OpBackend contract requires, so a
// test that gets the CPU result bit for bit proves the CPU rewrote the whole output.
#pragma once

#include <array>
#include <cmath>
#include <limits>

#include "backend/cpu/cpu_backend.h"
#include "runtime/dispatcher.h"

namespace quill::test {

class FakeFailingBackend final : public OpBackend {
 public:
  explicit FakeFailingBackend(ThreadPool& pool, Device device = Device::kCUDA) : cpu_(pool), device_(device) {
    supported_.fill(true);
  }

  void fail(OpKind k, bool on = true) { failing_[size_t(k)] = on; }
  void fail_all() { failing_.fill(true); }
  void set_supported(OpKind k, bool on) { supported_[size_t(k)] = on; }
  using Calls = uint64_t;
  // Calls that reached this backend (failed ones included), per kind.
  Calls calls(OpKind k) const { return calls_[size_t(k)]; }
  uint64_t total_calls() const {
    uint64_t n = 0;
    for (auto c : calls_) n += c;
    return n;
  }

  const char* name() const override { return "fake-gpu"; }
  Device device() const override { return device_; }
  bool supports(OpKind kind, const Tensor*) const override { return supported_[size_t(kind)]; }

  Status linear(const float* x, int64_t M, const Tensor& W, const float* bias, float* y, const OpScratch& s) override {
    if (failed(OpKind::kLinear)) return poisoned(y, M * W.dim(0));
    return cpu_.linear(x, M, W, bias, y, s);
  }
  Status attention(const float* q, const float* k, const float* v, float* out, int64_t B, int64_t Sq, int64_t Skv,
                   int64_t H, int64_t Dh, float scale, const OpScratch& s) override {
    if (failed(OpKind::kAttention)) return poisoned(out, B * Sq * H * Dh);
    return cpu_.attention(q, k, v, out, B, Sq, Skv, H, Dh, scale, s);
  }
  Status layer_norm_modulate(const float* x, float* y, int64_t B, int64_t S, int64_t D, float eps, const float* shift,
                             const float* scale, int64_t mod_stride) override {
    // y may alias x (in place); poison only a separate output.
    if (failed(OpKind::kLayerNorm)) return poisoned_unless_inplace(x, y, B * S * D);
    return cpu_.layer_norm_modulate(x, y, B, S, D, eps, shift, scale, mod_stride);
  }
  Status layer_norm(const float* x, float* y, int64_t rows, int64_t D, float eps, const float* w,
                    const float* b) override {
    if (failed(OpKind::kLayerNorm)) return poisoned_unless_inplace(x, y, rows * D);
    return cpu_.layer_norm(x, y, rows, D, eps, w, b);
  }
  Status rms_norm(const float* x, float* y, int64_t rows, int64_t D, float eps, const float* w) override {
    if (failed(OpKind::kRmsNorm)) return poisoned_unless_inplace(x, y, rows * D);
    return cpu_.rms_norm(x, y, rows, D, eps, w);
  }
  Status gelu_tanh(float* x, int64_t n) override {
    if (failed(OpKind::kActivation)) return device_failure();
    return cpu_.gelu_tanh(x, n);
  }
  Status gelu_erf(float* x, int64_t n) override {
    if (failed(OpKind::kGeluErf)) return device_failure();
    return cpu_.gelu_erf(x, n);
  }
  Status silu(float* x, int64_t n) override {
    if (failed(OpKind::kActivation)) return device_failure();
    return cpu_.silu(x, n);
  }
  Status relu(float* x, int64_t n) override {
    if (failed(OpKind::kActivation)) return device_failure();
    return cpu_.relu(x, n);
  }
  Status gated_residual(float* x, const float* y, const float* gate, int64_t B, int64_t S, int64_t D,
                        int64_t gate_stride) override {
    if (failed(OpKind::kResidual)) return device_failure();
    return cpu_.gated_residual(x, y, gate, B, S, D, gate_stride);
  }
  Status add(float* x, const float* y, int64_t rows, int64_t D, int64_t y_rows) override {
    if (failed(OpKind::kAdd)) return device_failure();
    return cpu_.add(x, y, rows, D, y_rows);
  }
  Status swiglu(const float* gate, const float* up, int64_t ld, float* out, int64_t M, int64_t F) override {
    if (failed(OpKind::kSwiGLU)) return poisoned(out, M * F);
    return cpu_.swiglu(gate, up, ld, out, M, F);
  }
  Status rope(float* x, int64_t B, int64_t S, int64_t H, int64_t Dh, const float* cos, const float* sin,
              int64_t pairs) override {
    if (failed(OpKind::kRope)) return device_failure();
    return cpu_.rope(x, B, S, H, Dh, cos, sin, pairs);
  }
  Status conv2d(const float* x, int64_t N, int64_t H, int64_t W, const Conv2dWeights& c, float* y) override {
    if (failed(OpKind::kConv2d)) return poisoned(y, N * c.out_channels * c.out_h(H) * c.out_w(W));
    return cpu_.conv2d(x, N, H, W, c, y);
  }
  Status group_norm(const float* x, float* y, int64_t N, int64_t C, int64_t HW, int64_t groups, float eps,
                    const float* gamma, const float* beta, bool silu) override {
    if (failed(OpKind::kGroupNorm)) return poisoned_unless_inplace(x, y, N * C * HW);
    return cpu_.group_norm(x, y, N, C, HW, groups, eps, gamma, beta, silu);
  }
  Status upsample_nearest2x(const float* x, float* y, int64_t planes, int64_t H, int64_t W) override {
    if (failed(OpKind::kUpsample)) return poisoned(y, planes * 4 * H * W);
    return cpu_.upsample_nearest2x(x, y, planes, H, W);
  }
  Status spatial_attention(const float* q, const float* k, const float* v, float* out, int64_t C, int64_t T,
                           float scale, float* scratch) override {
    if (failed(OpKind::kSpatialAttention)) return poisoned(out, C * T);
    return cpu_.spatial_attention(q, k, v, out, C, T, scale, scratch);
  }
  Status rope_half(float* x, int64_t B, int64_t S, int64_t H, int64_t Dh, const float* cos, const float* sin) override {
    if (failed(OpKind::kRopeHalf)) return device_failure();  // in place: must leave x for the CPU
    return cpu_.rope_half(x, B, S, H, Dh, cos, sin);
  }
  Status masked_attention(const float* q, const float* k, const float* v, float* out, int64_t B, int64_t S, int64_t H,
                          int64_t Hkv, int64_t Dh, float scale, const int32_t* valid, bool causal,
                          float* scratch) override {
    if (failed(OpKind::kMaskedAttention)) return poisoned(out, B * S * H * Dh);
    return cpu_.masked_attention(q, k, v, out, B, S, H, Hkv, Dh, scale, valid, causal, scratch);
  }
  Status resize_bicubic(const float* src, int64_t Hin, int64_t Win, int64_t C, float* dst, int64_t Hout,
                        int64_t Wout) override {
    if (failed(OpKind::kResize)) return poisoned(dst, Hout * Wout * C);
    return cpu_.resize_bicubic(src, Hin, Win, C, dst, Hout, Wout);
  }

 private:
  bool failed(OpKind k) {
    calls_[size_t(k)]++;
    return failing_[size_t(k)];
  }
  static Status device_failure() { return make_error(ErrorCode::kDevice, "fake device error (test double)"); }
  static Status poisoned(float* out, int64_t n) {
    for (int64_t i = 0; i < n; ++i) out[i] = std::numeric_limits<float>::quiet_NaN();
    return device_failure();
  }
  static Status poisoned_unless_inplace(const float* x, float* y, int64_t n) {
    return y == x ? device_failure() : poisoned(y, n);
  }

  CpuBackend cpu_;
  Device device_;
  std::array<bool, size_t(OpKind::kCount)> failing_{};
  std::array<bool, size_t(OpKind::kCount)> supported_{};
  std::array<uint64_t, size_t(OpKind::kCount)> calls_{};
};

}  // namespace quill::test
