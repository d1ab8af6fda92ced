#include "backend/cpu/cpu_backend.h"

#include <algorithm>
#include <memory>

#include "backend/cpu/blas_core.h"
#include "backend/cpu/conv2d.h"
#include "backend/cpu/gelu_erf.h"
#include "backend/cpu/group_norm.h"
#include "backend/cpu/kernel_table.h"
#include "backend/cpu/ops.h"
#include "backend/cpu/resize_bicubic.h"
#include "backend/cpu/spatial_attention.h"
#include "backend/cpu/upsample.h"
#include "quant/quant_linear.h"

namespace quill {

namespace {
// bf16 weights with bf16 activations (QUILL_TERNARY_MODE=a8), which quant_mode_for grants only
// where a kernel runs them (AVX-512; oneDNN's matmul with AVX512_BF16 / AMX). They come in pairs
// along K, so an odd K stays exact.
bool bf16_activations(const Tensor& W) {
  return W.dtype() == DType::kBF16 && W.rank() == 2 && W.dim(1) % 2 == 0 &&
         quant::quant_mode_for(DType::kBF16) == quant::QuantMode::kA8;
}

// Block-quantized and row-scaled (fp8) weights go through quant_linear, bf16 ones in A8 mode too,
// and f16 ones where the kernel table prefers its fused f16 kernel (AVX-512). Other f16 and exact
// bf16 weights take f32 panels + OpenBLAS sgemm (docs/PERFORMANCE.md, "f16 and bf16 weights").
bool uses_quant_linear(const Tensor& W) {
  return ((dtype_traits(W.dtype()).is_quantized || W.dtype() == DType::kF8E4M3) &&
          quant::quant_linear_supports(W.dtype())) ||
         bf16_activations(W) || (W.dtype() == DType::kF16 && cpu::kernel_table().quant.f16_fused);
}

// quant_linear's scratch is sized for the largest row chunk it processes at once (any M works
// with it) and for either mode (QUILL_TERNARY_MODE).
size_t quant_scratch_floats(const Tensor& W, const ThreadPool& pool) {
  const size_t bytes =
      std::max(quant::quant_linear_scratch_bytes(quant::kQuantMChunk, W, quant::QuantMode::kExact, pool),
               quant::quant_linear_scratch_bytes(quant::kQuantMChunk, W, quant::QuantMode::kA8, pool));
  return (bytes + sizeof(float) - 1) / sizeof(float);
}
}  // namespace

// The kernel table is chosen here, once per process, so its one-time work (the oneDNN bf16 probe,
// the AMX permission request) never lands inside a planned forward, which must not allocate.
CpuBackend::CpuBackend(ThreadPool& pool) : pool_(pool) {
  cpu::ensure_blas_core();
  (void)cpu::kernel_table();
}

std::unique_ptr<OpBackend> make_cpu_backend(ThreadPool& pool) { return std::make_unique<CpuBackend>(pool); }

size_t op_linear_scratch_floats(const Tensor& W, const ThreadPool& pool) {
  // A bf16 weight's route follows QUILL_TERNARY_MODE, read per call: room for either.
  if (W.rank() == 2 && W.dtype() == DType::kBF16)
    return std::max(quant_scratch_floats(W, pool), cpu::linear_scratch_floats(W, pool));
  if (W.rank() == 2 && uses_quant_linear(W)) return quant_scratch_floats(W, pool);
  return cpu::linear_scratch_floats(W, pool);
}
size_t op_attention_scratch_floats(int64_t Skv, int64_t Dh, const ThreadPool& pool) {
  return cpu::attention_scratch_floats(Skv, Dh, pool);
}
size_t op_spatial_attention_scratch_floats(int64_t T) { return cpu::spatial_attention_scratch_floats(T); }
size_t op_masked_attention_scratch_floats(int64_t S, const ThreadPool& pool) {
  return cpu::masked_attention_scratch_floats(S, pool);
}

Status CpuBackend::linear(const float* x, int64_t M, const Tensor& W, const float* bias, float* y, const OpScratch& s) {
  if (W.rank() != 2) return internal_error("linear weight must be 2-D, got ", W.shape().to_string());
  const auto& tr = dtype_traits(W.dtype());
  if (uses_quant_linear(W)) {
    if (quant_scratch_floats(W, pool_) > s.linear_floats)
      return internal_error("linear scratch too small for ", tr.name, ": plan sized ", s.linear_floats, " floats");
    return quant::quant_linear(x, M, W, W.row_scale(), bias, y, s.linear, quant::quant_mode_for(W.dtype()), pool_);
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
Status CpuBackend::gelu_erf(float* x, int64_t n) {
  cpu::gelu_erf(x, n, pool_);
  return Status::ok();
}
Status CpuBackend::silu(float* x, int64_t n) {
  cpu::silu(x, n, pool_);
  return Status::ok();
}
Status CpuBackend::relu(float* x, int64_t n) {
  cpu::relu(x, n, pool_);
  return Status::ok();
}
Status CpuBackend::gated_residual(float* x, const float* y, const float* gate, int64_t B, int64_t S, int64_t D,
                                  int64_t gate_stride) {
  cpu::gated_residual(x, y, gate, B, S, D, gate_stride, pool_);
  return Status::ok();
}
Status CpuBackend::add(float* x, const float* y, int64_t rows, int64_t D, int64_t y_rows) {
  if (y_rows <= 0) return internal_error("add: y_rows must be positive, got ", y_rows);
  cpu::add_rows(x, y, rows, D, y_rows, pool_);
  return Status::ok();
}
Status CpuBackend::swiglu(const float* gate, const float* up, int64_t ld, float* out, int64_t M, int64_t F) {
  cpu::swiglu(gate, up, ld, out, M, F, pool_);
  return Status::ok();
}
Status CpuBackend::rope(float* x, int64_t B, int64_t S, int64_t H, int64_t Dh, const float* cos, const float* sin,
                        int64_t pairs) {
  if (2 * pairs > Dh) return internal_error("rope: ", pairs, " pairs do not fit head dim ", Dh);
  cpu::rope(x, B, S, H, Dh, cos, sin, pairs, pool_);
  return Status::ok();
}

Status CpuBackend::conv2d(const float* x, int64_t N, int64_t H, int64_t W, const Conv2dWeights& c, float* y) {
  // The CPU layer (oneDNN primitives per input shape) lives with the weights, built on first use.
  auto layer = std::static_pointer_cast<cpu::Conv2d>(c.state.get_or_create(Device::kCPU, [&] {
    return std::shared_ptr<void>(std::make_shared<cpu::Conv2d>(
        cpu::Conv2d::view(c.weight.data(), c.bias_ptr(), c.out_channels, c.in_channels, c.kh, c.kw, c.stride, c.pad_top,
                          c.pad_left, c.pad_bottom, c.pad_right)));
  }));
  return layer->forward(x, N, H, W, y, pool_);
}
Status CpuBackend::group_norm(const float* x, float* y, int64_t N, int64_t C, int64_t HW, int64_t groups, float eps,
                              const float* gamma, const float* beta, bool silu) {
  if (groups <= 0 || C % groups != 0) return invalid_argument("group_norm: ", C, " channels in ", groups, " groups");
  cpu::group_norm(x, y, N, C, HW, groups, eps, gamma, beta, silu, pool_);
  return Status::ok();
}
Status CpuBackend::upsample_nearest2x(const float* x, float* y, int64_t planes, int64_t H, int64_t W) {
  cpu::upsample_nearest2x(x, y, planes, H, W, pool_);
  return Status::ok();
}
Status CpuBackend::spatial_attention(const float* q, const float* k, const float* v, float* out, int64_t C, int64_t T,
                                     float scale, float* scratch) {
  if (!scratch) return internal_error("spatial_attention: no scratch");
  cpu::spatial_attention(q, k, v, out, C, T, scale, scratch, pool_);
  return Status::ok();
}
Status CpuBackend::rope_half(float* x, int64_t B, int64_t S, int64_t H, int64_t Dh, const float* cos,
                             const float* sin) {
  if (Dh % 2) return invalid_argument("rope_half: head size ", Dh, " is odd");
  cpu::rope_half(x, B, S, H, Dh, cos, sin, pool_);
  return Status::ok();
}

Status CpuBackend::masked_attention(const float* q, const float* k, const float* v, float* out, int64_t B, int64_t S,
                                    int64_t H, int64_t Hkv, int64_t Dh, float scale, const int32_t* valid, bool causal,
                                    float* scratch) {
  if (B <= 0 || S <= 0 || Hkv <= 0 || H % Hkv != 0 || Dh <= 0)
    return invalid_argument("masked_attention: bad shape B ", B, ", S ", S, ", H ", H, ", Hkv ", Hkv, ", Dh ", Dh);
  for (int64_t b = 0; b < B; ++b)
    if (valid[b] < 1 || valid[b] > S)
      return invalid_argument("masked_attention: batch ", b, " has ", valid[b], " valid keys, expected 1 .. ", S);
  cpu::masked_attention(q, k, v, out, B, S, H, Hkv, Dh, scale, valid, causal, scratch, pool_);
  return Status::ok();
}

Status CpuBackend::resize_bicubic(const float* src, int64_t Hin, int64_t Win, int64_t C, float* dst, int64_t Hout,
                                  int64_t Wout) {
  if (Hin < 1 || Win < 1 || Hout < 1 || Wout < 1 || C < 1)
    return invalid_argument("resize_bicubic: sizes must be positive (", Hin, "x", Win, " -> ", Hout, "x", Wout, ")");
  cpu::resize_bicubic(src, Hin, Win, C, dst, Hout, Wout);
  return Status::ok();
}

}  // namespace quill
