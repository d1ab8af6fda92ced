#include "backend/cpu/resize_bicubic.h"

#include <algorithm>
#include <cmath>

namespace quill::cpu {

namespace {

struct Taps {
  int64_t index[4];
  float weight[4];
};

// Taps of output position `o` along an axis of `in` -> `out` samples.
Taps cubic_taps(int64_t o, int64_t in, int64_t out) {
  constexpr float A = -0.75f;
  const float scale = static_cast<float>(in) / static_cast<float>(out);
  const float real = scale * (static_cast<float>(o) + 0.5f) - 0.5f;
  const int64_t i0 = std::min(static_cast<int64_t>(std::floor(real)), in - 1);
  const float t = std::min(std::max(real - static_cast<float>(i0), 0.0f), 1.0f);
  // Keys' cubic convolution kernel: |d| <= 1 and 1 < |d| < 2.
  auto near = [](float d) { return ((A + 2.0f) * d - (A + 3.0f)) * d * d + 1.0f; };
  auto far = [](float d) { return ((A * d - 5.0f * A) * d + 8.0f * A) * d - 4.0f * A; };
  Taps taps;
  taps.weight[0] = far(t + 1.0f);
  taps.weight[1] = near(t);
  taps.weight[2] = near(1.0f - t);
  taps.weight[3] = far(2.0f - t);
  for (int j = 0; j < 4; ++j) taps.index[j] = std::clamp<int64_t>(i0 - 1 + j, 0, in - 1);
  return taps;
}

}  // namespace

void resize_bicubic(const float* src, int64_t Hin, int64_t Win, int64_t C, float* dst, int64_t Hout, int64_t Wout) {
  for (int64_t oy = 0; oy < Hout; ++oy) {
    const Taps ty = cubic_taps(oy, Hin, Hout);
    for (int64_t ox = 0; ox < Wout; ++ox) {
      const Taps tx = cubic_taps(ox, Win, Wout);
      float* d = dst + (oy * Wout + ox) * C;
      for (int64_t c = 0; c < C; ++c) {
        float acc = 0.0f;
        for (int i = 0; i < 4; ++i) {
          const float* row = src + ty.index[i] * Win * C + c;
          float r = 0.0f;
          for (int j = 0; j < 4; ++j) r += tx.weight[j] * row[tx.index[j] * C];
          acc += ty.weight[i] * r;
        }
        d[c] = acc;
      }
    }
  }
}

}  // namespace quill::cpu
