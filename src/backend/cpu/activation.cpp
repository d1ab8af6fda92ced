// Element-wise activations (in place), threaded over chunks; the SIMD bodies live in
// activation_avx2.cpp / activation_avx512.cpp (gelu_erf's in gelu_erf*.cpp).
//
// GELU (tanh approximation, PyTorch approximate="tanh"):
//   0.5 x (1 + tanh(u)),  u = sqrt(2/pi) (x + 0.044715 x^3)
// computed as x / (1 + exp(-2u)), the same function (0.5 (1 + tanh u) = sigmoid(2u)) without the
// cancellation in 1 + tanh(u) for negative x.
#include "backend/cpu/ops.h"

#include "backend/cpu/gelu_erf.h"
#include "backend/cpu/kernel_table.h"
#include "backend/cpu/vec_math.h"

namespace quill::cpu {

namespace scalar {

void gelu_tanh(float* x, int64_t n) {
  constexpr float kC0 = 0.7978845608028654f;  // sqrt(2 / pi)
  constexpr float kC1 = 0.7978845608028654f * 0.044715f;
  for (int64_t i = 0; i < n; ++i) {
    const float v = x[i];
    const float u = v * (kC0 + kC1 * v * v);
    x[i] = v / (1.0f + vmath::exp_approx(-2.0f * u));
  }
}

void silu(float* x, int64_t n) {
  for (int64_t i = 0; i < n; ++i) x[i] = x[i] / (1.0f + vmath::exp_approx(-x[i]));
}

}  // namespace scalar

namespace {

constexpr int64_t kChunk = 1 << 14;

void run_chunked(float* x, int64_t n, UnaryFn fn, ThreadPool& pool) {
  pool.parallel_for((n + kChunk - 1) / kChunk, 1, [&](int64_t b, int64_t e) {
    const int64_t lo = b * kChunk;
    const int64_t hi = e * kChunk < n ? e * kChunk : n;
    fn(x + lo, hi - lo);
  });
}

}  // namespace

void gelu_tanh(float* x, int64_t n, ThreadPool& pool) { run_chunked(x, n, kernel_table().gelu_tanh, pool); }
void silu(float* x, int64_t n, ThreadPool& pool) { run_chunked(x, n, kernel_table().silu, pool); }
void gelu_erf(float* x, int64_t n, ThreadPool& pool) { run_chunked(x, n, kernel_table().gelu_erf, pool); }

}  // namespace quill::cpu
