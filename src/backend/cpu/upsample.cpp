#include "backend/cpu/upsample.h"

#include <cstring>

namespace quill::cpu {

void upsample_nearest2x(const float* x, float* y, int64_t planes, int64_t H, int64_t W, ThreadPool& pool) {
  const int64_t W2 = 2 * W;
  pool.parallel_for(planes * H, 64, [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {  // r = plane * H + h
      const float* src = x + r * W;
      float* dst = y + 2 * r * W2;  // output rows 2h and 2h + 1 of the same plane
      for (int64_t w = 0; w < W; ++w) dst[2 * w] = dst[2 * w + 1] = src[w];
      std::memcpy(dst + W2, dst, size_t(W2) * sizeof(float));
    }
  });
}

}  // namespace quill::cpu
