#include "core/rng.h"

#include <cmath>

namespace quill {

void philox4x32_10(const uint32_t counter[4], const uint32_t key[2], uint32_t out[4]) {
  constexpr uint32_t kM0 = 0xD2511F53u, kM1 = 0xCD9E8D57u, kW0 = 0x9E3779B9u, kW1 = 0xBB67AE85u;
  uint32_t c0 = counter[0], c1 = counter[1], c2 = counter[2], c3 = counter[3];
  uint32_t k0 = key[0], k1 = key[1];
  for (int r = 0; r < 10; ++r) {
    const uint64_t p0 = uint64_t(kM0) * c0, p1 = uint64_t(kM1) * c2;
    const uint32_t hi0 = uint32_t(p0 >> 32), lo0 = uint32_t(p0), hi1 = uint32_t(p1 >> 32), lo1 = uint32_t(p1);
    c0 = hi1 ^ c1 ^ k0;
    c1 = lo1;
    c2 = hi0 ^ c3 ^ k1;
    c3 = lo0;
    k0 += kW0;
    k1 += kW1;
  }
  out[0] = c0;
  out[1] = c1;
  out[2] = c2;
  out[3] = c3;
}

void fill_normal(uint64_t seed, float* out, int64_t n) {
  const uint32_t key[2] = {uint32_t(seed), uint32_t(seed >> 32)};
  // Each Philox call gives 4 uniforms -> 2 Box-Muller pairs -> 4 normals.
  for (int64_t base = 0; base < n; base += 4) {
    const uint64_t blk = uint64_t(base / 4);
    const uint32_t ctr[4] = {uint32_t(blk), uint32_t(blk >> 32), 0, 0};
    uint32_t r[4];
    philox4x32_10(ctr, key, r);
    for (int pair = 0; pair < 2; ++pair) {
      // u1 in (0, 1], u2 in [0, 1): 32-bit uniforms scaled in double.
      const double u1 = (double(r[2 * pair]) + 1.0) / 4294967296.0;
      const double u2 = double(r[2 * pair + 1]) / 4294967296.0;
      const double rad = std::sqrt(-2.0 * std::log(u1));
      const double th = 6.283185307179586476925 * u2;
      const int64_t i = base + 2 * pair;
      if (i < n) out[i] = float(rad * std::cos(th));
      if (i + 1 < n) out[i + 1] = float(rad * std::sin(th));
    }
  }
}

}  // namespace quill
