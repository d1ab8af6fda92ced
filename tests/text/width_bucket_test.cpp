#include "text/width_bucket.h"

#include <gtest/gtest.h>

namespace quill {
namespace {

WidthBucket ok(int64_t natural, OverflowPolicy p = OverflowPolicy::kError) {
  auto r = width_bucket(natural, 64, 1024, 8, 2, p);
  EXPECT_TRUE(r.is_ok()) << r.status().to_string();
  return r.is_ok() ? r.value() : WidthBucket{};
}

TEST(WidthBucket, Edges) {
  EXPECT_EQ(ok(0).canvas_width, 64);     // empty -> minimum (line height rounded to 16)
  EXPECT_EQ(ok(63).canvas_width, 64);
  EXPECT_EQ(ok(64).canvas_width, 64);    // exactly the minimum
  EXPECT_EQ(ok(65).canvas_width, 80);    // one over rounds up to the next 16
  EXPECT_EQ(ok(160).canvas_width, 160);  // exact multiple stays
  EXPECT_EQ(ok(161).canvas_width, 176);
  const WidthBucket at_max = ok(1024);
  EXPECT_EQ(at_max.canvas_width, 1024);
  EXPECT_EQ(at_max.latent_width, 128);
  EXPECT_EQ(at_max.tokens, 64);
  EXPECT_FALSE(at_max.clamped);
  const WidthBucket clamped = ok(1025, OverflowPolicy::kClamp);
  EXPECT_EQ(clamped.canvas_width, 1024);
  EXPECT_TRUE(clamped.clamped);
  auto err = width_bucket(1025, 64, 1024, 8, 2, OverflowPolicy::kError);
  ASSERT_FALSE(err.is_ok());
  EXPECT_NE(err.status().message().find("1025 px wide but the model's max line width is 1024"), std::string::npos);
  // Odd line height: minimum is 16-aligned.
  EXPECT_EQ(width_bucket(0, 40, 1024, 8, 2, OverflowPolicy::kError)->canvas_width, 48);
}

TEST(WidthBucket, RejectsBadLimits) {
  EXPECT_FALSE(width_bucket(10, 64, 1000, 8, 2, OverflowPolicy::kError).is_ok());  // not a multiple of 16
  EXPECT_FALSE(width_bucket(10, 64, 48, 8, 2, OverflowPolicy::kError).is_ok());    // below the minimum
  EXPECT_FALSE(width_bucket(10, 64, 1024, 8, 0, OverflowPolicy::kError).is_ok());
  auto r = width_bucket(10, 64, 1024, 8, 4, OverflowPolicy::kError);                // 64/8 = 8 latents, 8 % 4 == 0: fine
  EXPECT_TRUE(r.is_ok());
  auto bad = width_bucket(70, 64, 1024, 8, 4, OverflowPolicy::kError);              // 80/8 = 10 latents, not /4
  ASSERT_FALSE(bad.is_ok());
  EXPECT_NE(bad.status().message().find("not divisible"), std::string::npos);
}

}  // namespace
}  // namespace quill
