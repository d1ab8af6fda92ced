#include "quant/formats.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <vector>

namespace quill::quant {
namespace {

TEST(Tq2Format, HandComputedBlock) {
  std::vector<float> w(128, 0.0f);
  w[0] = 2.0f;                                            // -> +1
  w[1] = -2.0f;                                           // -> -1
  w[5] = 0.02f;                                           // 0.02 / d = 0.21 -> 0
  w[127] = 8.0f;                                          // -> +1 (clamped)
  const float d = (2.0f + 2.0f + 0.02f + 8.0f) / 128.0f;  // absmean
  BlockTq2 blk;
  ASSERT_TRUE(quantize_tq2_0_g128(w.data(), 1, 128, &blk).is_ok());
  EXPECT_EQ(blk.d, f32_to_f16(d));
  // byte 0 holds weights 0..3: +1 (10), -1 (00), 0 (01), 0 (01), LSB first = 0b01'01'00'10.
  EXPECT_EQ(blk.qs[0], 0x52);
  EXPECT_EQ(blk.qs[1], 0x55);   // weights 4..7 all 0
  EXPECT_EQ(blk.qs[31], 0x95);  // weights 124..126 zero, 127 = +1 in the top two bits
  std::vector<float> back(128);
  ASSERT_TRUE(dequantize_tq2_0_g128(&blk, 1, 128, back.data()).is_ok());
  const float dq = f16_to_f32(blk.d);
  EXPECT_EQ(back[0], dq);
  EXPECT_EQ(back[1], -dq);
  EXPECT_EQ(back[2], 0.0f);
  EXPECT_EQ(back[127], dq);
}

TEST(Tq2Format, Code11ReadsAsZeroAndIsNeverWritten) {
  BlockTq2 blk;
  std::memset(blk.qs, 0xFF, sizeof(blk.qs));  // every code 11
  blk.qs[0] = 0xE4;                           // codes (LSB first) 00, 01, 10, 11 -> -1, 0, +1, 0
  blk.d = f32_to_f16(0.5f);
  std::vector<float> v(128);
  ASSERT_TRUE(dequantize_tq2_0_g128(&blk, 1, 128, v.data()).is_ok());
  EXPECT_EQ(v[0], -0.5f);
  EXPECT_EQ(v[1], 0.0f);
  EXPECT_EQ(v[2], 0.5f);
  EXPECT_EQ(v[3], 0.0f);
  for (int j = 4; j < 128; ++j) EXPECT_EQ(v[size_t(j)], 0.0f) << j;

  std::vector<float> w(256);
  for (size_t i = 0; i < w.size(); ++i) w[i] = std::sin(float(i)) * 3.0f;
  BlockTq2 two[2];
  ASSERT_TRUE(quantize_tq2_0_g128(w.data(), 2, 128, two).is_ok());
  for (const auto& b : two)
    for (int j = 0; j < 128; ++j) EXPECT_NE(tq2_code(b.qs, j), 3u);
}

TEST(Tq2Format, AllZeroBlockHasZeroScale) {
  std::vector<float> w(128, 0.0f);
  BlockTq2 blk;
  ASSERT_TRUE(quantize_tq2_0_g128(w.data(), 1, 128, &blk).is_ok());
  EXPECT_EQ(f16_to_f32(blk.d), 0.0f);
  for (int j = 0; j < 128; ++j) EXPECT_EQ(tq2_code(blk.qs, j), 1u);
}

TEST(Q8Format, HandComputedBlock) {
  std::vector<float> w(32, 0.0f);
  w[0] = 1.27f;     // absmax: d = 0.01, q = 127
  w[1] = -0.6351f;  // -63.51 -> -64
  w[2] = 0.004f;    // 0.4 -> 0
  BlockQ8_0 blk;
  ASSERT_TRUE(quantize_q8_0(w.data(), 1, 32, &blk).is_ok());
  EXPECT_EQ(blk.d, f32_to_f16(1.27f / 127.0f));
  EXPECT_EQ(blk.qs[0], 127);
  EXPECT_EQ(blk.qs[1], -64);
  EXPECT_EQ(blk.qs[2], 0);
  std::vector<float> back(32);
  ASSERT_TRUE(dequantize_q8_0(&blk, 1, 32, back.data()).is_ok());
  EXPECT_EQ(back[0], 127.0f * f16_to_f32(blk.d));
  EXPECT_EQ(back[1], -64.0f * f16_to_f32(blk.d));
}

TEST(Fp8Format, PerRowScale) {
  std::vector<float> w = {4.48f, -2.24f, 0.0f, 1.0f, 0.0f, 0.0f, 0.0f, 0.0f};
  std::vector<uint8_t> q(8);
  float s[2];
  ASSERT_TRUE(quantize_fp8_e4m3_rows(w.data(), 2, 4, q.data(), s).is_ok());
  EXPECT_FLOAT_EQ(s[0], 4.48f / 448.0f);
  EXPECT_EQ(s[1], 0.0f);
  EXPECT_EQ(q[0], f32_to_f8e4m3(4.48f / s[0]));
  EXPECT_EQ(f8e4m3_to_f32(q[0]), 448.0f);
  EXPECT_EQ(f8e4m3_to_f32(q[1]), -224.0f);
  std::vector<float> back(8);
  ASSERT_TRUE(dequantize_fp8_e4m3_rows(q.data(), s, 2, 4, back.data()).is_ok());
  EXPECT_FLOAT_EQ(back[0], 4.48f);
  EXPECT_NEAR(back[3], 1.0f, 1.0f / 16);  // e4m3 has 3 mantissa bits
  for (int i = 4; i < 8; ++i) EXPECT_EQ(back[size_t(i)], 0.0f);
}

TEST(Formats, KNotAMultipleOfTheBlockIsAnError) {
  std::vector<float> w(200);
  std::vector<uint8_t> out(1000);
  Status st = quantize_tq2_0_g128(w.data(), 1, 200, out.data());
  EXPECT_EQ(st.code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(st.to_string().find("multiple of the block size 128"), std::string::npos) << st.to_string();
  EXPECT_EQ(quantize_q8_0(w.data(), 1, 40, out.data()).code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(dequantize_q8_0(out.data(), 1, 40, w.data()).code(), ErrorCode::kInvalidArgument);
  Tensor t = Tensor::empty(DType::kF32, Shape{2, 96});
  EXPECT_EQ(quantize_tensor(t, DType::kTQ2_0_G128).status().code(), ErrorCode::kInvalidArgument);
}

TEST(Formats, TensorRoundTripReconstructionError) {
  const int64_t N = 4, K = 256;
  Tensor t = Tensor::empty(DType::kF32, Shape{N, K});
  for (int64_t i = 0; i < N * K; ++i) t.data_as<float>()[i] = std::cos(0.37f * float(i));
  for (DType dt : {DType::kQ8_0, DType::kTQ2_0_G128}) {
    auto q = quantize_tensor(t, dt);
    ASSERT_TRUE(q.is_ok()) << q.status().to_string();
    auto back = dequantize_tensor(*q);
    ASSERT_TRUE(back.is_ok());
    double err = 0, ref = 0;
    for (int64_t i = 0; i < N * K; ++i) {
      const double e = back->data_as<float>()[i] - t.data_as<float>()[i];
      err += e * e;
      ref += double(t.data_as<float>()[i]) * t.data_as<float>()[i];
    }
    EXPECT_LT(std::sqrt(err / ref), dt == DType::kQ8_0 ? 0.01 : 0.7) << dtype_name(dt);
  }
}

}  // namespace
}  // namespace quill::quant
