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
  EXPECT_EQ(ok(0).canvas_width, 64);  // empty -> minimum (line height rounded to 16)
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
  EXPECT_FALSE(width_bucket(10, 64, 1024, 0, 2, OverflowPolicy::kError).is_ok());
  EXPECT_FALSE(width_bucket(10, 0, 1024, 8, 2, OverflowPolicy::kError).is_ok());
  EXPECT_FALSE(width_bucket(-1, 64, 1024, 8, 2, OverflowPolicy::kError).is_ok());
  // downscale x patch must divide 16: with 8 x 4 a 64-wide canvas would split (8 latents, 2
  // tokens) but an 80-wide one would not, so the config is refused for every line alike.
  for (int64_t natural : {10, 70}) {
    auto bad = width_bucket(natural, 64, 1024, 8, 4, OverflowPolicy::kError);
    ASSERT_FALSE(bad.is_ok());
    EXPECT_EQ(bad.status().code(), ErrorCode::kInvalidArgument);
    EXPECT_NE(bad.status().message().find("downscale x patch = 32 must divide 16"), std::string::npos)
        << bad.status().message();
  }
  EXPECT_FALSE(width_bucket(10, 64, 1024, 3, 1, OverflowPolicy::kError).is_ok());
}

// Every (downscale, patch) pair that divides 16 gives whole latents and tokens for every width,
// against a brute-force restatement of the rule.
TEST(WidthBucket, AllWidthsAgainstTheRule) {
  for (int64_t h : {16, 40, 64}) {
    for (auto [d, p] : {std::pair<int64_t, int64_t>{1, 1}, {1, 4}, {2, 2}, {8, 2}, {16, 1}, {4, 4}}) {
      for (int64_t natural = 0; natural <= 600; natural += 7) {
        auto b = width_bucket(natural, h, 512, d, p, OverflowPolicy::kClamp);
        ASSERT_TRUE(b.is_ok()) << b.status().to_string();
        int64_t want = natural;
        while (want % 16) ++want;
        int64_t min_w = h;
        while (min_w % 16) ++min_w;
        want = std::min<int64_t>(std::max(want, min_w), 512);
        EXPECT_EQ(b->canvas_width, want) << natural;
        EXPECT_EQ(b->latent_width * d, want);
        EXPECT_EQ(b->tokens * p * d, want);
        EXPECT_EQ(b->clamped, natural > 512);
        EXPECT_EQ(width_bucket(natural, h, 512, d, p, OverflowPolicy::kError).is_ok(), natural <= 512);
      }
    }
  }
}

}  // namespace
}  // namespace quill
