#include "models/dit_common.h"

#include <cmath>

namespace quill {

void timestep_sinusoid(const float* t, int64_t B, int64_t dim, float* out) {
  const int64_t half = dim / 2;
  for (int64_t n = 0; n < B; ++n) {
    for (int64_t i = 0; i < half; ++i) {
      // The exponent is formed in f32 as torch does: (-ln(10000) * i) / half.
      const float exponent = (-static_cast<float>(std::log(10000.0)) * float(i)) / float(half);
      const float arg = t[n] * std::exp(exponent);
      out[n * dim + i] = std::cos(arg);
      out[n * dim + half + i] = std::sin(arg);
    }
    if (dim % 2) out[n * dim + dim - 1] = 0.0f;  // diffusers pads an odd width with one zero column
  }
}

void patchify(const float* x, int64_t B, int64_t C, int64_t H, int64_t W, int64_t p, float* patches,
              int64_t token_stride, int64_t channel_offset) {
  const int64_t hp = H / p, wp = W / p;
  if (token_stride == 0) token_stride = C * p * p;
  for (int64_t n = 0; n < B; ++n)
    for (int64_t y = 0; y < hp; ++y)
      for (int64_t xq = 0; xq < wp; ++xq) {
        float* row = patches + ((n * hp + y) * wp + xq) * token_stride + channel_offset * p * p;
        for (int64_t c = 0; c < C; ++c)
          for (int64_t ky = 0; ky < p; ++ky)
            for (int64_t kx = 0; kx < p; ++kx)
              row[(c * p + ky) * p + kx] = x[((n * C + c) * H + y * p + ky) * W + xq * p + kx];
      }
}

void unpatchify(const float* tokens, int64_t B, int64_t C, int64_t H, int64_t W, int64_t p, float* out) {
  const int64_t hp = H / p, wp = W / p;
  for (int64_t n = 0; n < B; ++n)
    for (int64_t y = 0; y < hp; ++y)
      for (int64_t xq = 0; xq < wp; ++xq) {
        const float* src = tokens + ((n * hp + y) * wp + xq) * p * p * C;
        for (int64_t ky = 0; ky < p; ++ky)
          for (int64_t kx = 0; kx < p; ++kx)
            for (int64_t c = 0; c < C; ++c)
              out[((n * C + c) * H + y * p + ky) * W + xq * p + kx] = src[(ky * p + kx) * C + c];
      }
}

}  // namespace quill
