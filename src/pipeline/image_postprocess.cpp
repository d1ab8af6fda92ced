#include "pipeline/image_postprocess.h"

#include <algorithm>
#include <cmath>

namespace quill {

void image_to_u8(const float* chw, int64_t C, int64_t H, int64_t W, uint8_t* hwc) {
  const int64_t HW = H * W;
  for (int64_t c = 0; c < C; ++c)
    for (int64_t p = 0; p < HW; ++p) {
      const float half = chw[c * HW + p] * 0.5f;  // two roundings, as torch does x * 0.5 + 0.5
      float v = half + 0.5f;
      v = std::isnan(v) ? 0.0f : std::clamp(v, 0.0f, 1.0f);
      const float scaled = v * 255.0f;
      hwc[p * C + c] = uint8_t(std::nearbyint(scaled));  // default rounding mode: ties to even
    }
}

std::vector<uint8_t> image_to_u8(const float* chw, int64_t C, int64_t H, int64_t W) {
  std::vector<uint8_t> out(static_cast<size_t>(C * H * W));
  image_to_u8(chw, C, H, W, out.data());
  return out;
}

}  // namespace quill
