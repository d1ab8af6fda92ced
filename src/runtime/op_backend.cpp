#include "runtime/op_backend.h"

#include <array>
#include <iterator>
#include <mutex>

namespace quill {

const char* op_kind_name(OpKind k) {
  // In OpKind's order; the names are what --diag prints and QUILL_FAULT_INJECT takes.
  static constexpr const char* kNames[] = {
      "linear", "attention", "layer_norm", "rms_norm",   "activation", "residual",          "gelu_erf", "add",
      "swiglu", "rope",      "conv2d",     "group_norm", "upsample",   "spatial_attention", "resize",
      "masked_attention", "rope_half"};
  static_assert(std::size(kNames) == size_t(OpKind::kCount), "a name for every OpKind");
  const auto i = size_t(k);
  return i < std::size(kNames) ? kNames[i] : "?";
}

// ---- OpState ----

struct OpState::Slots {
  std::mutex mu;
  std::array<std::shared_ptr<void>, 2> per_device;
};

OpState::OpState() : slots_(std::make_unique<Slots>()) {}
OpState::~OpState() = default;
OpState::OpState(OpState&&) noexcept = default;
OpState& OpState::operator=(OpState&&) noexcept = default;

std::shared_ptr<void> OpState::get_or_create(Device d, FunctionRef<std::shared_ptr<void>()> make) const {
  std::lock_guard<std::mutex> lock(slots_->mu);
  auto& slot = slots_->per_device[size_t(d)];
  if (!slot) slot = make();
  return slot;
}

// ---- Conv2dWeights ----

Result<Conv2dWeights> Conv2dWeights::create(const Tensor& weight, const Tensor& bias, int64_t stride, int64_t pad_top,
                                            int64_t pad_left, int64_t pad_bottom, int64_t pad_right,
                                            const std::string& name) {
  const std::string wname = name.empty() ? "conv.weight" : name + ".weight";
  if (weight.rank() != 4)
    return invalid_file("conv weight must be [out, in, kh, kw]")
        .with_tensor(wname)
        .with_expected_found("rank 4", weight.shape().to_string());
  if (!weight.is_contiguous() || !dtype_traits(weight.dtype()).is_float || dtype_traits(weight.dtype()).is_quantized)
    return unsupported("conv weight must be a contiguous float tensor, found ", weight.describe()).with_tensor(wname);
  if (stride <= 0 || pad_top < 0 || pad_left < 0 || pad_bottom < 0 || pad_right < 0)
    return invalid_argument("conv stride must be positive and padding non-negative").with_tensor(wname);
  Conv2dWeights c;
  c.name = name;
  c.out_channels = weight.dim(0);
  c.in_channels = weight.dim(1);
  c.kh = weight.dim(2);
  c.kw = weight.dim(3);
  c.stride = stride;
  c.pad_top = pad_top;
  c.pad_left = pad_left;
  c.pad_bottom = pad_bottom;
  c.pad_right = pad_right;
  c.weight.resize(static_cast<size_t>(weight.numel()));
  if (!convert_to_f32(weight.dtype(), weight.data(), c.weight.data(), weight.numel()))
    return unsupported("cannot convert ", dtype_name(weight.dtype()), " to f32").with_tensor(wname);
  if (bias.defined() && bias.numel() > 0) {
    const std::string bname = name.empty() ? "conv.bias" : name + ".bias";
    if (bias.rank() != 1 || bias.dim(0) != c.out_channels)
      return invalid_file("conv bias shape mismatch")
          .with_tensor(bname)
          .with_expected_found(Shape({c.out_channels}).to_string(), bias.shape().to_string());
    c.bias.resize(static_cast<size_t>(c.out_channels));
    if (!bias.is_contiguous() || !convert_to_f32(bias.dtype(), bias.data(), c.bias.data(), c.out_channels))
      return unsupported("cannot convert ", bias.describe(), " to f32").with_tensor(bname);
  }
  return c;
}

// ---- default bodies: "not on this backend" ----

Status OpBackend::not_here(OpKind kind) const { return unsupported(name(), " has no ", op_kind_name(kind), " op"); }

Status OpBackend::linear(const float*, int64_t, const Tensor&, const float*, float*, const OpScratch&) {
  return not_here(OpKind::kLinear);
}
Status OpBackend::attention(const float*, const float*, const float*, float*, int64_t, int64_t, int64_t, int64_t,
                            int64_t, float, const OpScratch&) {
  return not_here(OpKind::kAttention);
}
Status OpBackend::layer_norm_modulate(const float*, float*, int64_t, int64_t, int64_t, float, const float*,
                                      const float*, int64_t) {
  return not_here(OpKind::kLayerNorm);
}
Status OpBackend::layer_norm(const float*, float*, int64_t, int64_t, float, const float*, const float*) {
  return not_here(OpKind::kLayerNorm);
}
Status OpBackend::rms_norm(const float*, float*, int64_t, int64_t, float, const float*) {
  return not_here(OpKind::kRmsNorm);
}
Status OpBackend::gelu_tanh(float*, int64_t) { return not_here(OpKind::kActivation); }
Status OpBackend::gelu_erf(float*, int64_t) { return not_here(OpKind::kGeluErf); }
Status OpBackend::silu(float*, int64_t) { return not_here(OpKind::kActivation); }
Status OpBackend::relu(float*, int64_t) { return not_here(OpKind::kActivation); }
Status OpBackend::gated_residual(float*, const float*, const float*, int64_t, int64_t, int64_t, int64_t) {
  return not_here(OpKind::kResidual);
}
Status OpBackend::add(float*, const float*, int64_t, int64_t, int64_t) { return not_here(OpKind::kAdd); }
Status OpBackend::swiglu(const float*, const float*, int64_t, float*, int64_t, int64_t) {
  return not_here(OpKind::kSwiGLU);
}
Status OpBackend::rope(float*, int64_t, int64_t, int64_t, int64_t, const float*, const float*, int64_t) {
  return not_here(OpKind::kRope);
}
Status OpBackend::conv2d(const float*, int64_t, int64_t, int64_t, const Conv2dWeights&, float*) {
  return not_here(OpKind::kConv2d);
}
Status OpBackend::group_norm(const float*, float*, int64_t, int64_t, int64_t, int64_t, float, const float*,
                             const float*, bool) {
  return not_here(OpKind::kGroupNorm);
}
Status OpBackend::upsample_nearest2x(const float*, float*, int64_t, int64_t, int64_t) {
  return not_here(OpKind::kUpsample);
}
Status OpBackend::spatial_attention(const float*, const float*, const float*, float*, int64_t, int64_t, float, float*) {
  return not_here(OpKind::kSpatialAttention);
}
Status OpBackend::resize_bicubic(const float*, int64_t, int64_t, int64_t, float*, int64_t, int64_t) {
  return not_here(OpKind::kResize);
}
Status OpBackend::rope_half(float*, int64_t, int64_t, int64_t, int64_t, const float*, const float*) {
  return not_here(OpKind::kRopeHalf);
}
Status OpBackend::masked_attention(const float*, const float*, const float*, float*, int64_t, int64_t, int64_t, int64_t,
                                   int64_t, float, const int32_t*, bool, float*) {
  return not_here(OpKind::kMaskedAttention);
}

}  // namespace quill
