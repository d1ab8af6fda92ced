#include "runtime/op_backend.h"

#include <algorithm>

#include "backend/cpu/ops.h"
#include "core/log.h"
#include "quant/quant_linear.h"
#include "runtime/gpu_policy.h"

namespace quill {

const char* op_kind_name(OpKind k) {
  switch (k) {
    case OpKind::kLinear:
      return "linear";
    case OpKind::kAttention:
      return "attention";
    case OpKind::kLayerNorm:
      return "layer_norm";
    case OpKind::kRmsNorm:
      return "rms_norm";
    case OpKind::kActivation:
      return "activation";
    case OpKind::kResidual:
      return "residual";
    case OpKind::kCount:
      break;
  }
  return "?";
}

uint64_t OpStats::total(Device d) const {
  uint64_t n = 0;
  for (const auto& r : runs) n += r[size_t(d)];
  return n;
}

std::string OpStats::to_string() const {
  std::string s;
  for (size_t k = 0; k < runs.size(); ++k) {
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
    // Never fragile: log the first failure of each kind, count every one, use the CPU result.
    if (!fallback_logged_[k]) {
      fallback_logged_[k] = true;
      log_warn(primary_->name(), " ", op_kind_name(kind), " failed, using the CPU for it: ", st.to_string());
    }
    stats_.fallbacks[k]++;
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
Status Dispatcher::silu(float* x, int64_t n) {
  return run(OpKind::kActivation, nullptr, [&](OpBackend& b) { return b.silu(x, n); });
}
Status Dispatcher::gated_residual(float* x, const float* y, const float* gate, int64_t B, int64_t S, int64_t D,
                                  int64_t gate_stride) {
  return run(OpKind::kResidual, nullptr,
             [&](OpBackend& b) { return b.gated_residual(x, y, gate, B, S, D, gate_stride); });
}

// ---------------- CPU backend ----------------

namespace {
// Block-quantized and row-scaled (fp8) weights go through quant_linear.
bool uses_quant_linear(const Tensor& W) { return dtype_traits(W.dtype()).is_quantized || W.dtype() == DType::kF8E4M3; }

// Block-quantized weights go through quant_linear; its scratch is sized for the largest row
// chunk it processes at once (any M works with it) and for either mode (QUILL_TERNARY_MODE).
size_t quant_scratch_floats(const Tensor& W, const ThreadPool& pool) {
  const size_t bytes =
      std::max(quant::quant_linear_scratch_bytes(quant::kQuantMChunk, W, quant::QuantMode::kExact, pool),
               quant::quant_linear_scratch_bytes(quant::kQuantMChunk, W, quant::QuantMode::kA8, pool));
  return (bytes + sizeof(float) - 1) / sizeof(float);
}
}  // namespace

size_t CpuBackend::linear_scratch_floats(const Tensor& W, const ThreadPool& pool) {
  if (W.rank() == 2 && uses_quant_linear(W) && quant::quant_linear_supports(W.dtype()))
    return quant_scratch_floats(W, pool);
  return cpu::linear_scratch_floats(W, pool);
}
size_t CpuBackend::attention_scratch_floats(int64_t Skv, int64_t Dh, const ThreadPool& pool) {
  return cpu::attention_scratch_floats(Skv, Dh, pool);
}

Status CpuBackend::linear(const float* x, int64_t M, const Tensor& W, const float* bias, float* y, const OpScratch& s) {
  if (W.rank() != 2) return internal_error("linear weight must be 2-D, got ", W.shape().to_string());
  const auto& tr = dtype_traits(W.dtype());
  if (uses_quant_linear(W) && quant::quant_linear_supports(W.dtype())) {
    if (quant_scratch_floats(W, pool_) > s.linear_floats)
      return internal_error("linear scratch too small for ", tr.name, ": plan sized ", s.linear_floats, " floats");
    const quant::QuantMode mode = quant::quant_mode_from_env();
    return quant::quant_linear(x, M, W, W.row_scale(), bias, y, s.linear, mode, pool_);
  }
  if (tr.is_quantized || !(W.dtype() == DType::kF32 || W.dtype() == DType::kF16 || W.dtype() == DType::kBF16))
    return unsupported("CPU linear for weight dtype ", tr.name, " is not available in this build");
  if (cpu::linear_scratch_floats(W, pool_) > s.linear_floats)
    return internal_error("linear scratch too small: plan sized ", s.linear_floats, " floats");
  cpu::linear(x, M, W, bias, y, s.linear, pool_);
  return Status::ok();
}

Status CpuBackend::attention(const float* q, const float* k, const float* v, float* out, int64_t B, int64_t Sq,
                             int64_t Skv, int64_t H, int64_t Dh, float scale, const OpScratch& s) {
  if (cpu::attention_scratch_floats(Skv, Dh, pool_) > s.attention_floats)
    return internal_error("attention scratch too small: plan sized ", s.attention_floats, " floats");
  cpu::attention(q, k, v, out, B, Sq, Skv, H, Dh, scale, s.attention, pool_);
  return Status::ok();
}

Status CpuBackend::layer_norm_modulate(const float* x, float* y, int64_t B, int64_t S, int64_t D, float eps,
                                       const float* shift, const float* scale, int64_t mod_stride) {
  cpu::layer_norm_modulate(x, y, B, S, D, eps, shift, scale, mod_stride, pool_);
  return Status::ok();
}
Status CpuBackend::layer_norm(const float* x, float* y, int64_t rows, int64_t D, float eps, const float* w,
                              const float* b) {
  cpu::layer_norm(x, y, rows, D, eps, w, b, pool_);
  return Status::ok();
}
Status CpuBackend::rms_norm(const float* x, float* y, int64_t rows, int64_t D, float eps, const float* w) {
  cpu::rms_norm(x, y, rows, D, eps, w, pool_);
  return Status::ok();
}
Status CpuBackend::gelu_tanh(float* x, int64_t n) {
  cpu::gelu_tanh(x, n, pool_);
  return Status::ok();
}
Status CpuBackend::silu(float* x, int64_t n) {
  cpu::silu(x, n, pool_);
  return Status::ok();
}
Status CpuBackend::gated_residual(float* x, const float* y, const float* gate, int64_t B, int64_t S, int64_t D,
                                  int64_t gate_stride) {
  cpu::gated_residual(x, y, gate, B, S, D, gate_stride, pool_);
  return Status::ok();
}

}  // namespace quill
