// 0.5 x (1 + erf(x / sqrt 2)) is evaluated as 0.5 x erfc(-x / sqrt 2): the same function, without
// the cancellation in 1 + erf(.) for negative x, so small negative outputs keep full relative
// precision. libm's erfcf is scalar; the encoder spends little time here next to its GEMMs.
#include "backend/cpu/gelu_erf.h"

#include <cmath>

namespace quill::cpu {

void gelu_erf(float* x, int64_t n, ThreadPool& pool) {
  constexpr float kInvSqrt2 = 0.70710678118654752f;
  constexpr int64_t kChunk = 1 << 13;
  pool.parallel_for((n + kChunk - 1) / kChunk, 1, [&](int64_t b, int64_t e) {
    const int64_t hi = e * kChunk < n ? e * kChunk : n;
    for (int64_t i = b * kChunk; i < hi; ++i) x[i] = 0.5f * x[i] * std::erfc(-x[i] * kInvSqrt2);
  });
}

}  // namespace quill::cpu
