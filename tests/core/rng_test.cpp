#include "core/rng.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

namespace quill {
namespace {

// Known-answer vectors from the Random123 distribution (Salmon et al., SC'11), kat_vectors:
// philox4x32 10 rounds.
TEST(Rng, PhiloxKnownAnswers) {
  {
    const uint32_t ctr[4] = {0, 0, 0, 0}, key[2] = {0, 0};
    uint32_t out[4];
    philox4x32_10(ctr, key, out);
    EXPECT_EQ(out[0], 0x6627e8d5u);
    EXPECT_EQ(out[1], 0xe169c58du);
    EXPECT_EQ(out[2], 0xbc57ac4cu);
    EXPECT_EQ(out[3], 0x9b00dbd8u);
  }
  {
    const uint32_t ctr[4] = {0xffffffffu, 0xffffffffu, 0xffffffffu, 0xffffffffu}, key[2] = {0xffffffffu, 0xffffffffu};
    uint32_t out[4];
    philox4x32_10(ctr, key, out);
    EXPECT_EQ(out[0], 0x408f276du);
    EXPECT_EQ(out[1], 0x41c83b0eu);
    EXPECT_EQ(out[2], 0xa20bc7c6u);
    EXPECT_EQ(out[3], 0x6d5451fdu);
  }
}

TEST(Rng, NormalIsDeterministicAndPrefixStable) {
  std::vector<float> a(1001), b(17);
  fill_normal(42, a.data(), int64_t(a.size()));
  fill_normal(42, b.data(), int64_t(b.size()));
  for (size_t i = 0; i < b.size(); ++i) EXPECT_EQ(a[i], b[i]);
  double mean = 0, var = 0;
  for (float v : a) mean += v;
  mean /= double(a.size());
  for (float v : a) var += (v - mean) * (v - mean);
  var /= double(a.size());
  EXPECT_NEAR(mean, 0.0, 0.1);
  EXPECT_NEAR(var, 1.0, 0.15);
  std::vector<float> c(17);
  fill_normal(43, c.data(), 17);
  EXPECT_NE(c[0], b[0]);
}

}  // namespace
}  // namespace quill
