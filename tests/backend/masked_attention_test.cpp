// The CPU masked attention against the definition computed here in double: softmax over the keys a
// query may see (j < valid[b], and j <= i when causal), grouped KV heads.
#include <gtest/gtest.h>

#include <cmath>

#include "backend/cpu/ops.h"
#include "backend/op_test_util.h"

namespace quill {
namespace {

TEST(MaskedAttention, MatchesTheDefinition) {
  ThreadPool pool(2);
  const int64_t B = 2, S = 19, H = 6, Hkv = 2, Dh = 8;
  const float scale = 0.3f;
  const auto q = test::random_normal(size_t(B * S * H * Dh), 1);
  const auto k = test::random_normal(size_t(B * S * Hkv * Dh), 2);
  const auto v = test::random_normal(size_t(B * S * Hkv * Dh), 3);
  const int32_t valid[2] = {19, 7};
  for (bool causal : {true, false}) {
    std::vector<float> scratch(cpu::masked_attention_scratch_floats(S, pool)), out(size_t(B * S * H * Dh), NAN);
    cpu::masked_attention(q.data(), k.data(), v.data(), out.data(), B, S, H, Hkv, Dh, scale, valid, causal,
                          scratch.data(), pool);
    double worst = 0;
    for (int64_t b = 0; b < B; ++b)
      for (int64_t i = 0; i < S; ++i)
        for (int64_t h = 0; h < H; ++h) {
          const int64_t kv = h / (H / Hkv), limit = causal ? std::min<int64_t>(i + 1, valid[b]) : valid[b];
          std::vector<double> p(static_cast<size_t>(limit), 0.0);
          double mx = -1e300, sum = 0;
          for (int64_t j = 0; j < limit; ++j) {
            double d = 0;
            for (int64_t e = 0; e < Dh; ++e)
              d += double(q[size_t(((b * S + i) * H + h) * Dh + e)]) * k[size_t(((b * S + j) * Hkv + kv) * Dh + e)];
            p[size_t(j)] = d * scale;
            mx = std::max(mx, p[size_t(j)]);
          }
          for (auto& x : p) sum += (x = std::exp(x - mx));
          for (int64_t e = 0; e < Dh; ++e) {
            double o = 0;
            for (int64_t j = 0; j < limit; ++j) o += p[size_t(j)] / sum * v[size_t(((b * S + j) * Hkv + kv) * Dh + e)];
            worst = std::max(worst, std::fabs(o - out[size_t(((b * S + i) * H + h) * Dh + e)]));
          }
        }
    EXPECT_LE(worst, 1e-5) << (causal ? "causal" : "padding only");
  }
}

}  // namespace
}  // namespace quill
