// 2-D convolution on NCHW f32 activations with [O, I, kh, kw] f32 weights, a stride and
// (possibly asymmetric) zero padding, and an optional bias.
//
// Three implementations, all tested against conv2d_naive:
//   - oneDNN (QUILL_HAVE_DNNL): one primitive per input shape, created on first use and cached in
//     the Conv2d layer; activations stay plain NCHW and weights plain OIHW, so nothing is reordered
//     or copied per call;
//   - im2col + gemm_f32 (OpenBLAS when built with it), in chunks of output rows so the column
//     buffer stays small whatever the image size;
//   - the same im2col with the portable GEMM (no BLAS at all).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "backend/cpu/gemm.h"
#include "core/thread_pool.h"
#include "quill/status.h"
#include "quill/tensor.h"
#include "runtime/op_backend.h"

namespace quill::cpu {

struct Conv2dGeometry {
  int64_t N = 1, C = 0, H = 0, W = 0;  // input [N, C, H, W]
  int64_t O = 0, kh = 1, kw = 1;       // weight [O, C, kh, kw]
  int64_t stride = 1;
  int64_t pad_top = 0, pad_left = 0, pad_bottom = 0, pad_right = 0;

  int64_t out_h() const { return (H + pad_top + pad_bottom - kh) / stride + 1; }
  int64_t out_w() const { return (W + pad_left + pad_right - kw) / stride + 1; }
  Status validate() const;  // positive sizes, kernel fits the padded input
};

// The reference: direct loops with double accumulation. y: [N, O, out_h, out_w].
void conv2d_naive(const float* x, const float* w, const float* bias, float* y, const Conv2dGeometry& g);

// im2col + GEMM over chunks of output rows. `scratch` holds conv2d_gemm_scratch_floats(g) floats
// (0 for a 1x1, stride-1, unpadded convolution, which is a plain GEMM).
size_t conv2d_gemm_scratch_floats(const Conv2dGeometry& g);
void conv2d_gemm(const float* x, const float* w, const float* bias, float* y, const Conv2dGeometry& g, float* scratch,
                 ThreadPool& pool, GemmImpl gemm = GemmImpl::kAuto);

enum class ConvImpl {
  kAuto,      // oneDNN when built with it, else kGemm
  kGemm,      // im2col + gemm_f32 (OpenBLAS / oneDNN sgemm / portable)
  kPortable,  // im2col + the portable GEMM
};
// Process-wide default for Conv2d layers whose own impl is kAuto (tests switch paths with it).
void set_conv2d_default_impl(ConvImpl impl);
ConvImpl conv2d_default_impl();
bool conv2d_have_dnnl();

// A convolution layer: its weights converted to f32 once (from f32 / f16 / bf16), the bias, and a
// cache of per-input-shape state (oneDNN primitives, im2col scratch). forward() may be called from
// one thread at a time per layer (the cache is locked, the scratch is not shared across calls).
class Conv2d {
 public:
  Conv2d();
  ~Conv2d();
  Conv2d(Conv2d&&) noexcept;
  Conv2d& operator=(Conv2d&&) noexcept;

  // weight: [O, C, kh, kw]; bias: [O] or undefined. Both any float dtype, converted once
  // (Conv2dWeights::create). `name` is for errors.
  static Result<Conv2d> create(const Tensor& weight, const Tensor& bias, int64_t stride, int64_t pad_top,
                               int64_t pad_left, int64_t pad_bottom, int64_t pad_right, const std::string& name = "");
  // A layer over weights someone else owns and keeps alive (f32 [O, C, kh, kw], bias [O] or null):
  // nothing is copied. The op layer's Conv2dWeights hands its weights to the CPU this way.
  static Conv2d view(const float* weight, const float* bias, int64_t O, int64_t C, int64_t kh, int64_t kw,
                     int64_t stride, int64_t pad_top, int64_t pad_left, int64_t pad_bottom, int64_t pad_right);
  // Symmetric padding.
  static Result<Conv2d> create(const Tensor& weight, const Tensor& bias, int64_t stride, int64_t pad,
                               const std::string& name = "") {
    return create(weight, bias, stride, pad, pad, pad, pad, name);
  }

  int64_t in_channels() const { return C_; }
  int64_t out_channels() const { return O_; }
  Conv2dGeometry geometry(int64_t N, int64_t H, int64_t W) const;
  void set_impl(ConvImpl impl) { impl_ = impl; }
  const float* weight() const { return wp_; }
  const float* bias() const { return bp_; }

  // x: [N, C, H, W] -> y: [N, O, out_h, out_w]; x and y must not overlap.
  Status forward(const float* x, int64_t N, int64_t H, int64_t W, float* y, ThreadPool& pool) const;

 private:
  struct Cache;
  std::shared_ptr<const Conv2dWeights> owned_;  // create(): the converted weights; null for a view
  const float* wp_ = nullptr;                   // the weights in use
  const float* bp_ = nullptr;
  int64_t O_ = 0, C_ = 0, kh_ = 1, kw_ = 1, stride_ = 1;
  int64_t pt_ = 0, pl_ = 0, pb_ = 0, pr_ = 0;
  ConvImpl impl_ = ConvImpl::kAuto;
  std::unique_ptr<Cache> cache_;
};

}  // namespace quill::cpu
