#include "quill/dtype.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

namespace quill {
namespace {

TEST(DType, TraitsAndNames) {
  EXPECT_STREQ(dtype_name(DType::kBF16), "bf16");
  EXPECT_EQ(dtype_from_name("tq2_0_g128"), DType::kTQ2_0_G128);
  EXPECT_FALSE(dtype_from_name("f33").has_value());
  EXPECT_EQ(dtype_bytes_for(DType::kTQ2_0_G128, 256).value(), 68);
  EXPECT_FALSE(dtype_bytes_for(DType::kTQ2_0_G128, 100).has_value());
  EXPECT_EQ(dtype_bytes_for(DType::kQ8_0, 64).value(), 68);
  EXPECT_FALSE(dtype_bytes_for(DType::kF32, std::numeric_limits<int64_t>::max() / 2).has_value());
}

// Known bit patterns from IEEE 754 binary16.
TEST(DType, F16KnownBits) {
  EXPECT_EQ(f32_to_f16(1.0f), 0x3c00);
  EXPECT_EQ(f32_to_f16(-2.0f), 0xc000);
  EXPECT_EQ(f32_to_f16(65504.0f), 0x7bff);
  EXPECT_EQ(f32_to_f16(65520.0f), 0x7c00);  // rounds to Inf
  EXPECT_EQ(f32_to_f16(65519.99f), 0x7bff);
  EXPECT_EQ(f32_to_f16(std::numeric_limits<float>::infinity()), 0x7c00);
  EXPECT_EQ(f32_to_f16(-std::numeric_limits<float>::infinity()), 0xfc00);
  EXPECT_EQ(f32_to_f16(5.9604644775390625e-8f), 0x0001);   // smallest subnormal
  EXPECT_EQ(f32_to_f16(2.98023223876953125e-8f), 0x0000);  // exactly half: ties to even (0)
  EXPECT_EQ(f32_to_f16(8.94069671630859375e-8f), 0x0002);  // 1.5 ulp: ties to even (2)
  EXPECT_EQ(f32_to_f16(6.103515625e-5f), 0x0400);          // smallest normal
  EXPECT_EQ(f32_to_f16(1.0f + 1.0f / 2048), 0x3c00);       // tie, even stays
  EXPECT_EQ(f32_to_f16(1.0f + 3.0f / 2048), 0x3c02);       // tie, odd rounds up
  EXPECT_EQ(f32_to_f16(-0.0f), 0x8000);
  const uint16_t nan = f32_to_f16(std::numeric_limits<float>::quiet_NaN());
  EXPECT_EQ(nan & 0x7c00, 0x7c00);
  EXPECT_NE(nan & 0x03ff, 0);
  EXPECT_TRUE(std::isnan(f16_to_f32(0x7e00)));
  EXPECT_EQ(f16_to_f32(0x0001), 5.9604644775390625e-8f);
  EXPECT_EQ(f16_to_f32(0x3555), 0.333251953125f);
  EXPECT_TRUE(std::isinf(f16_to_f32(0xfc00)));
}

TEST(DType, F16RoundTripAllFinite) {
  for (uint32_t h = 0; h < 0x10000; ++h) {
    if ((h & 0x7c00) == 0x7c00) continue;
    EXPECT_EQ(f32_to_f16(f16_to_f32(uint16_t(h))), h) << h;
  }
}

TEST(DType, BF16KnownBits) {
  EXPECT_EQ(f32_to_bf16(1.0f), 0x3f80);
  EXPECT_EQ(f32_to_bf16(f32_from_bits(0x3f808000)), 0x3f80);  // tie to even
  EXPECT_EQ(f32_to_bf16(f32_from_bits(0x3f818000)), 0x3f82);  // tie, odd rounds up
  EXPECT_EQ(f32_to_bf16(f32_from_bits(0x3f808001)), 0x3f81);
  EXPECT_EQ(f32_to_bf16(f32_from_bits(0x7f7fffff)), 0x7f80);  // max float rounds to Inf
  EXPECT_EQ(f32_to_bf16(std::numeric_limits<float>::infinity()), 0x7f80);
  EXPECT_TRUE(std::isnan(bf16_to_f32(f32_to_bf16(std::numeric_limits<float>::quiet_NaN()))));
  // A NaN whose payload sits only in the low bits must not become Inf.
  EXPECT_TRUE(std::isnan(bf16_to_f32(f32_to_bf16(f32_from_bits(0x7f800001)))));
  EXPECT_EQ(bf16_to_f32(0xc040), -3.0f);
}

TEST(DType, F8E4M3KnownBits) {
  EXPECT_EQ(f32_to_f8e4m3(1.0f), 0x38);
  EXPECT_EQ(f32_to_f8e4m3(448.0f), 0x7e);
  EXPECT_EQ(f32_to_f8e4m3(1000.0f), 0x7e);  // saturates (documented)
  EXPECT_EQ(f32_to_f8e4m3(-448.0f), 0xfe);
  EXPECT_EQ(f32_to_f8e4m3(0.001953125f), 0x01);   // 2^-9, smallest subnormal
  EXPECT_EQ(f32_to_f8e4m3(0.0009765625f), 0x00);  // half of it: tie to even
  EXPECT_EQ(f32_to_f8e4m3(1.0625f), 0x38);        // tie between 1.0 and 1.125 -> even (1.0)
  EXPECT_EQ(f32_to_f8e4m3(1.1875f), 0x3a);        // tie between 1.125 and 1.25 -> even (1.25)
  EXPECT_EQ(f32_to_f8e4m3(0.015625f), 0x08);      // 2^-6, smallest normal
  EXPECT_EQ(f8e4m3_to_f32(0x7e), 448.0f);
  EXPECT_TRUE(std::isnan(f8e4m3_to_f32(0x7f)));
  EXPECT_TRUE(std::isnan(f8e4m3_to_f32(0xff)));
  EXPECT_EQ(f32_to_f8e4m3(std::numeric_limits<float>::quiet_NaN()) & 0x7f, 0x7f);
  for (int v = 0; v < 256; ++v) {
    if ((v & 0x7f) == 0x7f) continue;
    EXPECT_EQ(f32_to_f8e4m3(f8e4m3_to_f32(uint8_t(v))), v == 0x80 ? 0x80 : v) << v;
  }
}

TEST(DType, F8E5M2KnownBits) {
  EXPECT_EQ(f32_to_f8e5m2(1.0f), 0x3c);
  EXPECT_EQ(f32_to_f8e5m2(57344.0f), 0x7b);
  EXPECT_EQ(f32_to_f8e5m2(65536.0f), 0x7c);  // overflow -> Inf
  EXPECT_EQ(f32_to_f8e5m2(-std::numeric_limits<float>::infinity()), 0xfc);
  EXPECT_TRUE(std::isinf(f8e5m2_to_f32(0x7c)));
  EXPECT_TRUE(std::isnan(f8e5m2_to_f32(0x7d)));
  EXPECT_EQ(f8e5m2_to_f32(0x01), 1.52587890625e-05f);  // 2^-16
  for (int v = 0; v < 256; ++v) {
    if ((v & 0x7c) == 0x7c) continue;
    EXPECT_EQ(f32_to_f8e5m2(f8e5m2_to_f32(uint8_t(v))), v) << v;
  }
}

}  // namespace
}  // namespace quill
