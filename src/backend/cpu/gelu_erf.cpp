// The scalar gelu_erf (the threaded op is in activation.cpp, beside the other activations).
#include "backend/cpu/gelu_erf.h"

#include "backend/cpu/vec_math.h"

namespace quill::cpu {

namespace scalar {

void gelu_erf(float* x, int64_t n) {
  using namespace gelu_erf_detail;
  for (int64_t i = 0; i < n; ++i) {
    const float v = x[i];
    const float z = v * kNegInvSqrt2;
    const float a = z < 0.0f ? -z : z;
    const float t = 1.0f / (1.0f + 0.5f * a);
    float p = kP[9];
    for (int j = 8; j >= 0; --j) p = p * t + kP[j];
    const float e = t * vmath::exp_approx(p - a * a);  // erfc(a)
    x[i] = 0.5f * v * (z < 0.0f ? 2.0f - e : e);
  }
}

}  // namespace scalar

}  // namespace quill::cpu
