// The GPU layout of ternary weights, checked on the host (no device needed): every weight read
// back the way the kernel reads it (lane (g, t), k16 step s, byte slot, bf16 pair decode) equals
// the format's dequantised value.
#include <gtest/gtest.h>

#include <cstring>

#include "backend/cuda/tq2_layout.h"
#include "support/tq2_reference.h"

namespace quill {
namespace {

using namespace quill::cuda;

float bf16_half(uint32_t pair, int which) { return bf16_to_f32(uint16_t(which ? pair >> 16 : pair & 0xFFFF)); }

TEST(Tq2Layout, PairDecodeCoversAllCodes) {
  const float want[4] = {-1.0f, 0.0f, 1.0f, 0.0f};
  for (uint32_t a = 0; a < 4; ++a) {
    for (uint32_t b = 0; b < 4; ++b) {
      const uint32_t pair = tq2_pair_to_bf16x2(a | (b << 2));
      EXPECT_EQ(bf16_half(pair, 0), want[a]) << a << "," << b;
      EXPECT_EQ(bf16_half(pair, 1), want[b]) << a << "," << b;
      // Zeros must be +0 exactly (no stray sign bits feeding the MMA).
      if (want[a] == 0.0f) {
        EXPECT_EQ(pair & 0xFFFFu, 0u);
      }
      if (want[b] == 0.0f) {
        EXPECT_EQ(pair >> 16, 0u);
      }
    }
  }
}

TEST(Tq2Layout, KernelReadsEqualTheFormatsValues) {
  const int64_t N = 13, K = 384;  // 3 groups, N not a multiple of 8
  const auto blocks = test::random_tq2(N, K, 7);
  const auto ref = test::dequant_tq2(blocks, N, K);
  std::vector<uint8_t> codes(size_t(tq2_codes_bytes(N, K)), 0xEE);
  std::vector<uint16_t> scales(size_t(tq2_scales_count(N, K)), 0xFFFF);
  tq2_repack(blocks.data(), N, K, codes.data(), scales.data());

  int64_t checked = 0;
  for (int64_t n = 0; n < N; ++n) {
    for (int64_t group = 0; group < K / 128; ++group) {
      const float scale = f16_to_f32(scales[size_t(group * N + n)]);
      // What lane (g = n % 8, t) loads: 8 bytes at t * 8 of its (group, n) record.
      const uint8_t* rec = &codes[size_t((group * N + n) * 32)];
      for (int t = 0; t < 4; ++t) {
        uint64_t word;
        std::memcpy(&word, rec + t * 8, 8);
        for (int s = 0; s < 8; ++s) {
          const uint32_t byte = uint32_t(word >> (8 * s)) & 0xFFu;  // uint2 .x holds s 0..3, .y s 4..7
          const uint32_t b0 = tq2_pair_to_bf16x2(byte & 0xFu), b1 = tq2_pair_to_bf16x2(byte >> 4);
          // MMA B fragment: b0 = (k 2t, 2t+1), b1 = (k 2t+8, 2t+9) of k16 step s.
          const int64_t k0 = group * 128 + 16 * s + 2 * t;
          const float got[4] = {bf16_half(b0, 0), bf16_half(b0, 1), bf16_half(b1, 0), bf16_half(b1, 1)};
          const int64_t ks[4] = {k0, k0 + 1, k0 + 8, k0 + 9};
          for (int i = 0; i < 4; ++i) {
            ASSERT_EQ(got[i] * scale, ref[size_t(n * K + ks[i])]) << "n " << n << " k " << ks[i];
            ++checked;
          }
        }
      }
    }
  }
  EXPECT_EQ(checked, N * K);  // every weight exactly once
}

TEST(Tq2Layout, SizesFollowTheShape) {
  EXPECT_EQ(tq2_codes_bytes(3072, 3072), 3072 * 3072 / 4);
  EXPECT_EQ(tq2_scales_count(3072, 3072), 3072 * 24);
}

}  // namespace
}  // namespace quill
