// Exact GELU on every ISA level against 0.5 x erfc(-x / sqrt 2) in double (libm), over a grid,
// edge values and an odd-length random vector (every SIMD tail) split across threads.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

#include "backend/cpu/gelu_erf.h"
#include "backend/op_test_util.h"

namespace quill {
namespace {

using testing_ops::IsaScope;
using testing_ops::testable_isas;

TEST(CpuGeluErf, MatchesExactFormulaOnEveryIsa) {
  std::vector<float> x;
  for (int i = -3000; i <= 3000; ++i) x.push_back(float(i) * 0.005f);  // [-15, 15]
  for (float v : {0.0f, -0.0f, 1e-30f, -1e-30f, 1e-6f, -1e-6f, 30.0f, -30.0f, 100.0f, -100.0f, 1e30f}) x.push_back(v);
  const auto r = test::random_normal(40001, 11, 4.0f);
  x.insert(x.end(), r.begin(), r.end());
  ThreadPool pool(3);
  for (CpuIsa isa : testable_isas()) {
    IsaScope scope(isa);
    std::vector<float> y = x;
    cpu::gelu_erf(y.data(), int64_t(y.size()), pool);
    double worst = 0;
    for (size_t i = 0; i < x.size(); ++i) {
      const double e = 0.5 * double(x[i]) * std::erfc(-double(x[i]) / std::sqrt(2.0));
      // Relative to the output. Far in the negative tail the float rounding of x^2 / 2 moves erfc
      // by ~x^2 * 6e-8 relative (PyTorch's float erf has the same); below x ~ -13 the output is
      // under 1e-38 and only needs to be tiny.
      const double tol = 1e-6 * (1.0 + double(x[i]) * double(x[i])) * std::fabs(e) + 1e-37;
      ASSERT_NEAR(y[i], e, tol) << "x = " << x[i] << " isa " << int(isa);
      if (std::fabs(x[i]) < 6) worst = std::max(worst, std::fabs(y[i] - e) / std::max(std::fabs(e), 1e-30));
    }
    // |x| < 6, the range a network uses; at x = -6 the float rounding of x^2 / 2 (= 18) in the
    // exponent alone is 1e-6 relative.
    EXPECT_LE(worst, 5e-6) << "isa " << int(isa);
    std::printf("gelu_erf isa %d: max relative error for |x| < 6: %.3g\n", int(isa), worst);
  }
}

TEST(CpuGeluErf, PropagatesNan) {
  ThreadPool pool(1);
  for (CpuIsa isa : testable_isas()) {
    IsaScope scope(isa);
    std::vector<float> y(37, 1.0f);
    y[5] = y[20] = std::numeric_limits<float>::quiet_NaN();
    cpu::gelu_erf(y.data(), int64_t(y.size()), pool);
    EXPECT_TRUE(std::isnan(y[5]) && std::isnan(y[20]));
    EXPECT_FLOAT_EQ(y[0], float(0.5 * std::erfc(-1.0 / std::sqrt(2.0))));
  }
}

}  // namespace
}  // namespace quill
