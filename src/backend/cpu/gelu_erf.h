// Exact GELU, as PyTorch's nn.functional.gelu(approximate="none") and transformers' "gelu":
//   x * Phi(x) = 0.5 x (1 + erf(x / sqrt 2)) = 0.5 x erfc(-x / sqrt 2).
// Kept beside ops.h (not in it) because only the ViT encoders use it.
//
// erfc without libm, so the loops vectorise: for a = |z| >= 0,
//   erfc(a) = t exp(P(t) - a^2),  t = 1 / (1 + a / 2),  erfc(-a) = 2 - erfc(a),
// with P of degree 9 fitted for this file (tools/fit_erfc.py, near-minimax in the exponent:
// |error| < 1e-7, so erfc has relative error ~1e-7 plus the float rounding of a^2 and exp).
// Computing erfc (not 1 + erf) keeps full relative precision in the negative tail.
#pragma once

#include <cstdint>

#include "core/thread_pool.h"

namespace quill::cpu {

void gelu_erf(float* x, int64_t n, ThreadPool& pool);  // in place

namespace gelu_erf_detail {
inline constexpr float kNegInvSqrt2 = -0.70710678118654752f;
inline constexpr float kP[10] = {-1.265512220e+00f, 1.000022650e+00f, 3.741250381e-01f,  9.638813190e-02f,
                                 -1.839661573e-01f, 2.713515052e-01f, -1.121099738e+00f, 1.473255248e+00f,
                                 -8.133255412e-01f, 1.687610028e-01f};
}  // namespace gelu_erf_detail

// Per-ISA bodies (gelu_erf.cpp, gelu_erf_avx2.cpp, gelu_erf_avx512.cpp); kernel_table.cpp picks one.
namespace scalar {
void gelu_erf(float* x, int64_t n);
}
namespace avx2 {
void gelu_erf(float* x, int64_t n);
}
namespace avx512 {
void gelu_erf(float* x, int64_t n);
}

}  // namespace quill::cpu
