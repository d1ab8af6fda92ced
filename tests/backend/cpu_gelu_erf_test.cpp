// Exact GELU against 0.5 x (1 + erf(x / sqrt 2)) in double, over a grid, edge values and an
// odd-length random vector split across threads.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "backend/cpu/gelu_erf.h"
#include "backend/op_test_util.h"

namespace quill {
namespace {

TEST(CpuGeluErf, MatchesExactFormula) {
  std::vector<float> x;
  for (int i = -2400; i <= 2400; ++i) x.push_back(float(i) * 0.005f);
  for (float v : {0.0f, -0.0f, 1e-30f, -1e-30f, 1e-6f, -1e-6f, 30.0f, -30.0f, 100.0f, -100.0f}) x.push_back(v);
  const auto r = testing_ops::randn(40001, 11, 0.0f, 4.0f);
  x.insert(x.end(), r.begin(), r.end());
  std::vector<float> y = x;
  ThreadPool pool(3);
  cpu::gelu_erf(y.data(), int64_t(y.size()), pool);
  for (size_t i = 0; i < x.size(); ++i) {
    const double e = 0.5 * double(x[i]) * std::erfc(-double(x[i]) / std::sqrt(2.0));
    // Relative to the output. In the far negative tail the float rounding of x / sqrt 2 alone moves
    // erfc by ~x^2 * 6e-8 relative (PyTorch rounds the same way); below x ~ -13 it underflows.
    const double tol = 1e-6 * (1.0 + double(x[i]) * double(x[i])) * std::fabs(e) + 1e-37;
    ASSERT_NEAR(y[i], e, tol) << "x = " << x[i];
  }
}

}  // namespace
}  // namespace quill
