// Flash attention (every ISA level) and the naive reference against attention in double, on odd
// sequence lengths, Sq != Skv, several heads and head sizes, with NaN-poisoned output and scratch.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "backend/cpu/ops.h"
#include "backend/op_test_util.h"

namespace quill {
namespace {

using test::nan_filled;
using test::random_normal;
using testing_ops::IsaScope;
using testing_ops::testable_isas;

struct Shape4 {
  int64_t B, Sq, Skv, H, Dh;
};

std::vector<double> reference(const std::vector<float>& q, const std::vector<float>& k, const std::vector<float>& v,
                              const Shape4& s, double scale) {
  const int64_t row = s.H * s.Dh;
  std::vector<double> out(size_t(s.B * s.Sq * row)), p(size_t(s.Skv));
  for (int64_t b = 0; b < s.B; ++b)
    for (int64_t h = 0; h < s.H; ++h)
      for (int64_t i = 0; i < s.Sq; ++i) {
        const float* qi = q.data() + (b * s.Sq + i) * row + h * s.Dh;
        double mx = -INFINITY, sum = 0.0;
        for (int64_t j = 0; j < s.Skv; ++j) {
          const float* kj = k.data() + (b * s.Skv + j) * row + h * s.Dh;
          double d = 0.0;
          for (int64_t t = 0; t < s.Dh; ++t) d += double(qi[t]) * kj[t];
          p[size_t(j)] = d * scale;
          mx = std::max(mx, p[size_t(j)]);
        }
        for (auto& e : p) sum += (e = std::exp(e - mx));
        double* oi = out.data() + (b * s.Sq + i) * row + h * s.Dh;
        for (int64_t j = 0; j < s.Skv; ++j) {
          const float* vj = v.data() + (b * s.Skv + j) * row + h * s.Dh;
          for (int64_t t = 0; t < s.Dh; ++t) oi[t] += p[size_t(j)] / sum * vj[t];
        }
      }
  return out;
}

// max |a - ref| / max |ref|
double rel_error(const std::vector<float>& a, const std::vector<double>& ref) {
  double err = 0.0, mag = 0.0;
  for (size_t i = 0; i < a.size(); ++i) {
    if (!std::isfinite(a[i])) return INFINITY;
    err = std::max(err, std::fabs(a[i] - ref[i]));
    mag = std::max(mag, std::fabs(ref[i]));
  }
  return err / mag;
}

double rel_error(const std::vector<float>& a, const std::vector<float>& b) {
  return rel_error(a, std::vector<double>(b.begin(), b.end()));
}

void check(const Shape4& s, float qk_std, ThreadPool& pool) {
  SCOPED_TRACE(testing::Message() << "B=" << s.B << " Sq=" << s.Sq << " Skv=" << s.Skv << " H=" << s.H << " Dh=" << s.Dh
                                  << " qk_std=" << qk_std);
  const auto q = random_normal(size_t(s.B * s.Sq * s.H * s.Dh), 1, qk_std, 0.0f);
  const auto k = random_normal(size_t(s.B * s.Skv * s.H * s.Dh), 2, qk_std, 0.0f);
  const auto v = random_normal(size_t(s.B * s.Skv * s.H * s.Dh), 3);
  const float scale = 1.0f / std::sqrt(float(s.Dh));
  const auto ref = reference(q, k, v, s, scale);

  auto naive = nan_filled(q.size());
  cpu::attention_naive(q.data(), k.data(), v.data(), naive.data(), s.B, s.Sq, s.Skv, s.H, s.Dh, scale);
  EXPECT_LE(rel_error(naive, ref), 1e-5) << "naive";

  for (CpuIsa isa : testable_isas()) {
    IsaScope scope(isa);
    SCOPED_TRACE(cpu_isa_name(isa));
    auto out = nan_filled(q.size());
    auto scratch = nan_filled(cpu::attention_scratch_floats(s.Skv, s.Dh, pool));
    cpu::attention(q.data(), k.data(), v.data(), out.data(), s.B, s.Sq, s.Skv, s.H, s.Dh, scale, scratch.data(), pool);
    EXPECT_LE(rel_error(out, ref), 1e-5) << "flash vs double";
    EXPECT_LE(rel_error(out, naive), 1e-5) << "flash vs naive";
  }
}

TEST(CpuAttention, FlashMatchesReferenceOnOddShapes) {
  ThreadPool pool(3);
  const Shape4 shapes[] = {
      {1, 1, 1, 1, 8},    {1, 7, 7, 3, 8},     {2, 33, 33, 3, 64},  {1, 257, 257, 1, 64}, {1, 1, 257, 3, 72},
      {2, 257, 7, 1, 72}, {1, 33, 129, 3, 64}, {1, 65, 300, 2, 13}, {2, 128, 128, 2, 64}, {1, 7, 1, 1, 64},
  };
  for (const auto& s : shapes) check(s, 1.0f, pool);
}

TEST(CpuAttention, SharpSoftmaxRescalesAcrossKeyTiles) {
  // Large logits: the running max changes between key tiles and most probabilities underflow.
  ThreadPool pool(2);
  for (const Shape4& s : {Shape4{1, 70, 400, 2, 64}, Shape4{1, 33, 257, 1, 8}}) check(s, 3.0f, pool);
}

TEST(CpuAttention, IncreasingScoresForceEveryTileToRescale) {
  // Keys aligned with the query and growing in norm: each key tile holds a new maximum.
  ThreadPool pool(2);
  const Shape4 s{1, 5, 600, 1, 16};
  std::vector<float> q(size_t(s.Sq * s.Dh), 0.25f), k(size_t(s.Skv * s.Dh)), v = random_normal(size_t(s.Skv * s.Dh), 4);
  for (int64_t j = 0; j < s.Skv; ++j)
    for (int64_t t = 0; t < s.Dh; ++t) k[size_t(j * s.Dh + t)] = 0.01f * float(j);
  const auto ref = reference(q, k, v, s, 1.0);
  for (CpuIsa isa : testable_isas()) {
    IsaScope scope(isa);
    auto out = nan_filled(q.size());
    auto scratch = nan_filled(cpu::attention_scratch_floats(s.Skv, s.Dh, pool));
    cpu::attention(q.data(), k.data(), v.data(), out.data(), s.B, s.Sq, s.Skv, s.H, s.Dh, 1.0f, scratch.data(), pool);
    EXPECT_LE(rel_error(out, ref), 1e-5) << cpu_isa_name(isa);
  }
}

TEST(CpuAttention, ScratchIsLinearInSequenceNotQuadratic) {
  ThreadPool pool(2);
  const size_t s1 = cpu::attention_scratch_floats(1024, 64, pool), s4 = cpu::attention_scratch_floats(4096, 64, pool);
  EXPECT_LT(s4, 4 * s1);                     // no S^2 term
  EXPECT_LT(s4, size_t(2) * 4096 * 64 * 3);  // per thread: about one head's K and V
}

}  // namespace
}  // namespace quill
