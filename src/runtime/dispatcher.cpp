#include "runtime/dispatcher.h"

#include "core/log.h"
#include "runtime/gpu_policy.h"

namespace quill {

uint64_t OpStats::total(Device d) const {
  uint64_t n = 0;
  for (const auto& r : runs) n += r[size_t(d)];
  return n;
}

std::string OpStats::to_string() const {
  std::string s;
  for (size_t k = 0; k < runs.size(); ++k) {
    if (runs[k][0] + runs[k][1] + fallbacks[k] == 0) continue;
    s += str_cat(op_kind_name(OpKind(k)), ": cpu=", runs[k][0], " cuda=", runs[k][1], " fallback=", fallbacks[k], "\n");
  }
  return s;
}

Dispatcher::Dispatcher(OpBackend* cpu, OpBackend* primary) : cpu_(cpu), primary_(primary), policy_(&gpu_policy()) {}

void Dispatcher::set_policy(const GpuPolicy* policy) { policy_ = policy ? policy : &gpu_policy(); }

template <typename F>
Status Dispatcher::run(OpKind kind, const Tensor* weight, F&& call) {
  const size_t k = size_t(kind);
  if (primary_ && policy_->allows(kind, weight) && primary_->supports(kind, weight)) {
    // Fault injection fails the op before the primary touches anything, like a launch that failed.
    Status st = policy_->fault_injected(kind)
                    ? make_error(ErrorCode::kDevice, "fault injected by QUILL_FAULT_INJECT=", op_kind_name(kind))
                    : call(*primary_);
    if (st.is_ok()) {
      stats_.runs[k][size_t(primary_->device())]++;
      return st;
    }
    if (st.code() != ErrorCode::kUnsupported) {
      // Never fragile: log the first failure of each kind, count every one, use the CPU result.
      if (!fallback_logged_[k]) {
        fallback_logged_[k] = true;
        log_warn(primary_->name(), " ", op_kind_name(kind), " failed, using the CPU for it: ", st.to_string());
      }
      stats_.fallbacks[k]++;
    }
  }
  Status st = call(*cpu_);
  if (st.is_ok()) stats_.runs[k][size_t(Device::kCPU)]++;
  return st;
}

Status Dispatcher::linear(const float* x, int64_t M, const Tensor& W, const float* bias, float* y) {
  return run(OpKind::kLinear, &W, [&](OpBackend& b) { return b.linear(x, M, W, bias, y, scratch_); });
}
Status Dispatcher::attention(const float* q, const float* k, const float* v, float* out, int64_t B, int64_t Sq,
                             int64_t Skv, int64_t H, int64_t Dh, float scale) {
  return run(OpKind::kAttention, nullptr,
             [&](OpBackend& b) { return b.attention(q, k, v, out, B, Sq, Skv, H, Dh, scale, scratch_); });
}
Status Dispatcher::layer_norm_modulate(const float* x, float* y, int64_t B, int64_t S, int64_t D, float eps,
                                       const float* shift, const float* scale, int64_t mod_stride) {
  return run(OpKind::kLayerNorm, nullptr,
             [&](OpBackend& b) { return b.layer_norm_modulate(x, y, B, S, D, eps, shift, scale, mod_stride); });
}
Status Dispatcher::layer_norm(const float* x, float* y, int64_t rows, int64_t D, float eps, const float* w,
                              const float* bb) {
  return run(OpKind::kLayerNorm, nullptr, [&](OpBackend& b) { return b.layer_norm(x, y, rows, D, eps, w, bb); });
}
Status Dispatcher::rms_norm(const float* x, float* y, int64_t rows, int64_t D, float eps, const float* w) {
  return run(OpKind::kRmsNorm, nullptr, [&](OpBackend& b) { return b.rms_norm(x, y, rows, D, eps, w); });
}
Status Dispatcher::gelu_tanh(float* x, int64_t n) {
  return run(OpKind::kActivation, nullptr, [&](OpBackend& b) { return b.gelu_tanh(x, n); });
}
Status Dispatcher::gelu_erf(float* x, int64_t n) {
  return run(OpKind::kGeluErf, nullptr, [&](OpBackend& b) { return b.gelu_erf(x, n); });
}
Status Dispatcher::silu(float* x, int64_t n) {
  return run(OpKind::kActivation, nullptr, [&](OpBackend& b) { return b.silu(x, n); });
}
Status Dispatcher::relu(float* x, int64_t n) {
  return run(OpKind::kActivation, nullptr, [&](OpBackend& b) { return b.relu(x, n); });
}
Status Dispatcher::gated_residual(float* x, const float* y, const float* gate, int64_t B, int64_t S, int64_t D,
                                  int64_t gate_stride) {
  return run(OpKind::kResidual, nullptr,
             [&](OpBackend& b) { return b.gated_residual(x, y, gate, B, S, D, gate_stride); });
}
Status Dispatcher::add(float* x, const float* y, int64_t rows, int64_t D, int64_t y_rows) {
  return run(OpKind::kAdd, nullptr, [&](OpBackend& b) { return b.add(x, y, rows, D, y_rows); });
}
Status Dispatcher::swiglu(const float* gate, const float* up, int64_t ld, float* out, int64_t M, int64_t F) {
  return run(OpKind::kSwiGLU, nullptr, [&](OpBackend& b) { return b.swiglu(gate, up, ld, out, M, F); });
}
Status Dispatcher::rope(float* x, int64_t B, int64_t S, int64_t H, int64_t Dh, const float* cos, const float* sin,
                        int64_t pairs) {
  return run(OpKind::kRope, nullptr, [&](OpBackend& b) { return b.rope(x, B, S, H, Dh, cos, sin, pairs); });
}
Status Dispatcher::conv2d(const float* x, int64_t N, int64_t H, int64_t W, const Conv2dWeights& c, float* y) {
  return run(OpKind::kConv2d, nullptr, [&](OpBackend& b) { return b.conv2d(x, N, H, W, c, y); });
}
Status Dispatcher::group_norm(const float* x, float* y, int64_t N, int64_t C, int64_t HW, int64_t groups, float eps,
                              const float* gamma, const float* beta, bool silu) {
  return run(OpKind::kGroupNorm, nullptr,
             [&](OpBackend& b) { return b.group_norm(x, y, N, C, HW, groups, eps, gamma, beta, silu); });
}
Status Dispatcher::upsample_nearest2x(const float* x, float* y, int64_t planes, int64_t H, int64_t W) {
  return run(OpKind::kUpsample, nullptr, [&](OpBackend& b) { return b.upsample_nearest2x(x, y, planes, H, W); });
}
Status Dispatcher::spatial_attention(const float* q, const float* k, const float* v, float* out, int64_t C, int64_t T,
                                     float scale, float* scratch) {
  return run(OpKind::kSpatialAttention, nullptr,
             [&](OpBackend& b) { return b.spatial_attention(q, k, v, out, C, T, scale, scratch); });
}
Status Dispatcher::rope_half(float* x, int64_t B, int64_t S, int64_t H, int64_t Dh, const float* cos,
                             const float* sin) {
  return run(OpKind::kRopeHalf, nullptr, [&](OpBackend& b) { return b.rope_half(x, B, S, H, Dh, cos, sin); });
}
Status Dispatcher::masked_attention(const float* q, const float* k, const float* v, float* out, int64_t B, int64_t S,
                                    int64_t H, int64_t Hkv, int64_t Dh, float scale, const int32_t* valid, bool causal,
                                    float* scratch) {
  return run(OpKind::kMaskedAttention, nullptr, [&](OpBackend& b) {
    return b.masked_attention(q, k, v, out, B, S, H, Hkv, Dh, scale, valid, causal, scratch);
  });
}
Status Dispatcher::resize_bicubic(const float* src, int64_t Hin, int64_t Win, int64_t C, float* dst, int64_t Hout,
                                  int64_t Wout) {
  return run(OpKind::kResize, nullptr,
             [&](OpBackend& b) { return b.resize_bicubic(src, Hin, Win, C, dst, Hout, Wout); });
}

}  // namespace quill
