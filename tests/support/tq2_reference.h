// Scalar reference for tq2_0_g128 (REFERENCES.md): random blocks and their dequantisation, written
// from the format's definition and independent of src/backend/cuda's layout code.
#pragma once

#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include "quill/dtype.h"

namespace quill::test {

// W [N, K] as N rows of K/128 blocks of {qs[32], f16 d}; codes uniform over 00, 01, 10, 11 (11 is
// read as 0 and must be handled), scales in [0.01, 0.1).
inline std::vector<uint8_t> random_tq2(int64_t N, int64_t K, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> byte(0, 255);
  std::uniform_real_distribution<float> scale(0.01f, 0.1f);
  std::vector<uint8_t> blocks(static_cast<size_t>(N * (K / 128) * 34));
  for (size_t b = 0; b < blocks.size(); b += 34) {
    for (int i = 0; i < 32; ++i) blocks[b + size_t(i)] = uint8_t(byte(rng));
    const uint16_t d = f32_to_f16(scale(rng));
    std::memcpy(&blocks[b + 32], &d, 2);
  }
  return blocks;
}

inline std::vector<float> dequant_tq2(const std::vector<uint8_t>& blocks, int64_t N, int64_t K) {
  std::vector<float> w(static_cast<size_t>(N * K));
  const int64_t groups = K / 128;
  for (int64_t n = 0; n < N; ++n) {
    for (int64_t g = 0; g < groups; ++g) {
      const uint8_t* blk = &blocks[size_t((n * groups + g) * 34)];
      uint16_t d16;
      std::memcpy(&d16, blk + 32, 2);
      const float d = f16_to_f32(d16);
      for (int j = 0; j < 128; ++j) {
        const int code = (blk[j / 4] >> (2 * (j % 4))) & 3;
        const float v = code == 0 ? -1.0f : (code == 2 ? 1.0f : 0.0f);
        w[size_t(n * K + g * 128 + j)] = v * d;
      }
    }
  }
  return w;
}

}  // namespace quill::test
