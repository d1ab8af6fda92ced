// The op interface every backend implements. Models reach kernels only through the Dispatcher
// (runtime/dispatcher.h), which calls these methods on the primary backend (CUDA, or a test
// double) and falls back to the CPU per op.
//
// Every op has a default body that answers kUnsupported, so a backend implements only what it
// has; the Dispatcher runs an unsupported op on the CPU without calling it a failure. The CPU
// backend (backend/cpu/cpu_backend.h) implements every op and is the reference the op suite
// (tests/runtime/op_suite_test.cpp) compares every other backend to.
//
// Backend contract (what makes the fallback safe): an op that returns an error must leave its
// inputs untouched, in-place buffers included (activations, add, rope, gated_residual's x); its
// outputs may hold anything, since the CPU rewrites them completely.
//
// Adding an op: an OpKind (and its name in op_backend.cpp), a virtual here with a default body,
// the CPU kernel in CpuBackend, a Dispatcher method, one case in the op suite; a CUDA kernel is
// optional.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/function_ref.h"
#include "core/thread_pool.h"
#include "quill/status.h"
#include "quill/tensor.h"

namespace quill {

enum class OpKind : uint8_t {
  kLinear = 0,
  kAttention,
  kLayerNorm,
  kRmsNorm,
  kActivation,  // gelu_tanh, silu, relu
  kResidual,
  kGeluErf,
  kAdd,
  kSwiGLU,
  kRope,
  kConv2d,
  kGroupNorm,
  kUpsample,
  kSpatialAttention,
  kResize,
  kMaskedAttention,  // causal / padded attention with grouped KV heads (text encoders)
  kRopeHalf,         // rotary embedding on the two halves of each head (GPT-NeoX / Llama / Qwen layout)
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

// Scratch the CPU ops need (the CPU is every op's fallback, so plans always size for it).
size_t op_linear_scratch_floats(const Tensor& W, const ThreadPool& pool);
size_t op_attention_scratch_floats(int64_t Skv, int64_t Dh, const ThreadPool& pool);
size_t op_spatial_attention_scratch_floats(int64_t T);
size_t op_masked_attention_scratch_floats(int64_t S, const ThreadPool& pool);

// Per-backend state a backend attaches to a model's weights (the CPU's oneDNN primitives, a
// device copy), built on first use and kept as long as the weights. Thread-safe.
class OpState {
 public:
  OpState();
  ~OpState();
  OpState(OpState&&) noexcept;
  OpState& operator=(OpState&&) noexcept;

  // The state of device `d`, created by `make` on first use.
  std::shared_ptr<void> get_or_create(Device d, FunctionRef<std::shared_ptr<void>()> make) const;

 private:
  struct Slots;
  std::unique_ptr<Slots> slots_;
};

// A 2-D convolution as a model holds it: f32 weights [O, C, kh, kw], bias [O] (or none), stride
// and (possibly asymmetric) zero padding, converted once at load from any float dtype.
struct Conv2dWeights {
  std::vector<float> weight, bias;
  int64_t out_channels = 0, in_channels = 0, kh = 1, kw = 1, stride = 1;
  int64_t pad_top = 0, pad_left = 0, pad_bottom = 0, pad_right = 0;
  std::string name;  // for errors: the weight's name without ".weight"
  OpState state;

  // weight: [O, C, kh, kw]; bias: [O] or undefined; any float dtype.
  static Result<Conv2dWeights> create(const Tensor& weight, const Tensor& bias, int64_t stride, int64_t pad_top,
                                      int64_t pad_left, int64_t pad_bottom, int64_t pad_right,
                                      const std::string& name = "");
  static Result<Conv2dWeights> create(const Tensor& weight, const Tensor& bias, int64_t stride, int64_t pad,
                                      const std::string& name = "") {
    return create(weight, bias, stride, pad, pad, pad, pad, name);
  }
  int64_t out_h(int64_t H) const { return (H + pad_top + pad_bottom - kh) / stride + 1; }
  int64_t out_w(int64_t W) const { return (W + pad_left + pad_right - kw) / stride + 1; }
  const float* bias_ptr() const { return bias.empty() ? nullptr : bias.data(); }
};

class OpBackend {
 public:
  virtual ~OpBackend() = default;
  virtual const char* name() const = 0;
  virtual Device device() const = 0;
  // May the Dispatcher send this op here? (weight: the linear's weight, else null.) A backend may
  // also answer kUnsupported from the op itself; the Dispatcher then runs it on the CPU.
  virtual bool supports(OpKind kind, const Tensor* weight) const = 0;

  // y[M, N] = x[M, K] . W[N, K]^T (+ bias[N]).
  virtual Status linear(const float* x, int64_t M, const Tensor& W, const float* bias, float* y, const OpScratch& s);
  // q: [B, Sq, H, Dh], k, v: [B, Skv, H, Dh], out: [B, Sq, H, Dh]; softmax(q k^T * scale) v.
  virtual Status attention(const float* q, const float* k, const float* v, float* out, int64_t B, int64_t Sq,
                           int64_t Skv, int64_t H, int64_t Dh, float scale, const OpScratch& s);
  // y[b, s, :] = LN(x[b, s, :]) * (1 + scale[b, :]) + shift[b, :]; shift/scale rows mod_stride apart.
  virtual Status layer_norm_modulate(const float* x, float* y, int64_t B, int64_t S, int64_t D, float eps,
                                     const float* shift, const float* scale, int64_t mod_stride);
  virtual Status layer_norm(const float* x, float* y, int64_t rows, int64_t D, float eps, const float* w,
                            const float* b);
  virtual Status rms_norm(const float* x, float* y, int64_t rows, int64_t D, float eps, const float* w);
  // Activations, in place.
  virtual Status gelu_tanh(float* x, int64_t n);
  virtual Status gelu_erf(float* x, int64_t n);
  virtual Status silu(float* x, int64_t n);
  virtual Status relu(float* x, int64_t n);
  // x[b, s, :] += gate[b, :] * y[b, s, :]; gate rows gate_stride apart (0: one gate for all b).
  virtual Status gated_residual(float* x, const float* y, const float* gate, int64_t B, int64_t S, int64_t D,
                                int64_t gate_stride);
  // x[r, :] += y[r % y_rows, :] for r < rows: a plain sum (y_rows = rows) or a table broadcast
  // over the batch (a position embedding, y_rows = sequence length).
  virtual Status add(float* x, const float* y, int64_t rows, int64_t D, int64_t y_rows);
  // out[m, j] = silu(gate[m * ld + j]) * up[m * ld + j] for m < M, j < F; out rows F apart.
  virtual Status swiglu(const float* gate, const float* up, int64_t ld, float* out, int64_t M, int64_t F);
  // Rotary embedding on x [B, S, H, Dh] in place: for token s and pair i (elements 2i, 2i + 1 of
  // each head), (a, b) -> (a cos - b sin, a sin + b cos) with cos/sin at [s * pairs + i].
  virtual Status rope(float* x, int64_t B, int64_t S, int64_t H, int64_t Dh, const float* cos, const float* sin,
                      int64_t pairs);
  // NCHW: x [N, C, H, W] -> y [N, O, out_h, out_w]; x and y must not overlap.
  virtual Status conv2d(const float* x, int64_t N, int64_t H, int64_t W, const Conv2dWeights& c, float* y);
  // x, y [N, C, HW] (y may equal x): torch GroupNorm, then SiLU when `silu`.
  virtual Status group_norm(const float* x, float* y, int64_t N, int64_t C, int64_t HW, int64_t groups, float eps,
                            const float* gamma, const float* beta, bool silu);
  // Nearest 2x: x [planes, H, W] -> y [planes, 2H, 2W].
  virtual Status upsample_nearest2x(const float* x, float* y, int64_t planes, int64_t H, int64_t W);
  // Single-head attention over a channel-major map: q, k, v, out [C, T]. `scratch` holds
  // op_spatial_attention_scratch_floats(T) floats for the CPU.
  virtual Status spatial_attention(const float* q, const float* k, const float* v, float* out, int64_t C, int64_t T,
                                   float scale, float* scratch);
  // Bicubic resize (torch, align_corners=False) of a channels-last image [Hin, Win, C] -> [Hout, Wout, C].
  virtual Status resize_bicubic(const float* src, int64_t Hin, int64_t Win, int64_t C, float* dst, int64_t Hout,
                                int64_t Wout);
  // Decoder-style attention: q, out [B, S, H, Dh], k, v [B, S, Hkv, Dh] (H a multiple of Hkv;
  // head h reads KV head h / (H / Hkv)). Query i of batch b attends keys j < valid[b], and j <= i
  // when `causal` (right padding: a padded query still sees every real token before it).
  // valid[b] must be in [1, S]. `scratch` holds op_masked_attention_scratch_floats(S) floats (the
  // CPU's: one S x S score matrix).
  // Rotary embedding, "rotate half" layout, in place on x [rows, H, Dh] with rows = B * S: element
  // i < Dh/2 pairs with i + Dh/2, (a, b) -> (a cos - b sin, b cos + a sin), cos/sin at
  // [(row % S) * Dh/2 + i].
  virtual Status rope_half(float* x, int64_t B, int64_t S, int64_t H, int64_t Dh, const float* cos, const float* sin);
  virtual Status masked_attention(const float* q, const float* k, const float* v, float* out, int64_t B, int64_t S,
                                  int64_t H, int64_t Hkv, int64_t Dh, float scale, const int32_t* valid, bool causal,
                                  float* scratch);

 protected:
  Status not_here(OpKind kind) const;
};

// The CPU backend (backend/cpu/cpu_backend.h), for code outside src/backend that must not see it.
std::unique_ptr<OpBackend> make_cpu_backend(ThreadPool& pool);

}  // namespace quill
