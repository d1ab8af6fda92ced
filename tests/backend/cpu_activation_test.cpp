// GELU (tanh) and SiLU on every ISA level: against the exact formulas in double, and GELU against
// PyTorch's own float32 values (tests/fixtures/ops/gelu_tanh.txt, from tools/make_op_fixtures.py).
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "backend/cpu/ops.h"
#include "backend/op_test_util.h"

namespace quill {
namespace {

using test::random_normal;
using testing_ops::IsaScope;
using testing_ops::testable_isas;

double gelu_tanh_exact(double x) {
  const double u = std::sqrt(2.0 / M_PI) * (x + 0.044715 * x * x * x);
  return 0.5 * x * (1.0 + std::tanh(u));
}

double silu_exact(double x) { return x / (1.0 + std::exp(-x)); }

std::vector<float> test_inputs() {
  std::vector<float> x;
  for (int i = -2400; i <= 2400; ++i) x.push_back(float(i) * 0.005f);  // [-12, 12]
  for (float v : {0.0f, -0.0f, 1e-30f, -1e-30f, 1e-6f, -1e-6f, 30.0f, -30.0f, 87.0f, -87.0f, 100.0f, -100.0f})
    x.push_back(v);
  const auto r = random_normal(40001, 7, 4.0f);  // odd length: every SIMD tail
  x.insert(x.end(), r.begin(), r.end());
  return x;
}

TEST(CpuActivation, GeluTanhMatchesExactFormula) {
  ThreadPool pool(3);
  const auto x = test_inputs();
  for (CpuIsa isa : testable_isas()) {
    IsaScope scope(isa);
    for (size_t n : {size_t(1), size_t(7), size_t(33), x.size()}) {
      SCOPED_TRACE(testing::Message() << cpu_isa_name(isa) << " n=" << n);
      std::vector<float> y(x.begin(), x.begin() + long(n));
      cpu::gelu_tanh(y.data(), int64_t(n), pool);
      for (size_t i = 0; i < n; ++i) {
        const double ref = gelu_tanh_exact(x[i]);
        ASSERT_NEAR(y[i], ref, 1e-6 * std::fabs(ref) + 1e-9) << "x=" << x[i];
      }
    }
  }
}

TEST(CpuActivation, GeluTanhMatchesTorch) {
  std::ifstream in(std::string(QUILL_FIXTURES_DIR) + "/ops/gelu_tanh.txt");
  ASSERT_TRUE(in) << "missing fixture; run tools/make_op_fixtures.py";
  std::vector<float> x, t;
  for (std::string line; std::getline(in, line);) {
    if (line.empty() || line[0] == '#') continue;
    std::istringstream ls(line);
    float a, b;
    ls >> a >> b;
    x.push_back(a);
    t.push_back(b);
  }
  ASSERT_GT(x.size(), 500u);
  ThreadPool pool(2);
  for (CpuIsa isa : testable_isas()) {
    IsaScope scope(isa);
    SCOPED_TRACE(cpu_isa_name(isa));
    auto y = x;
    cpu::gelu_tanh(y.data(), int64_t(y.size()), pool);
    for (size_t i = 0; i < x.size(); ++i) {
      // Torch evaluates 0.5 x (1 + tanh u) in float: for x below ~-1.5, 1 + tanh(u) cancels and
      // torch's own error is up to 0.5 |x| ulp(1) = 6e-8 |x| absolute. Above that: 1e-6 relative.
      const double tol =
          x[i] >= -1.5f ? 1e-6 * std::fabs(t[i]) + 1e-12 : 1e-6 * std::fabs(t[i]) + 6e-8 * std::fabs(x[i]);
      ASSERT_NEAR(y[i], t[i], tol) << "x=" << x[i];
    }
  }
}

TEST(CpuActivation, SiluMatchesExactFormula) {
  ThreadPool pool(3);
  const auto x = test_inputs();
  for (CpuIsa isa : testable_isas()) {
    IsaScope scope(isa);
    for (size_t n : {size_t(1), size_t(7), size_t(33), x.size()}) {
      SCOPED_TRACE(testing::Message() << cpu_isa_name(isa) << " n=" << n);
      std::vector<float> y(x.begin(), x.begin() + long(n));
      cpu::silu(y.data(), int64_t(n), pool);
      for (size_t i = 0; i < n; ++i) {
        const double ref = silu_exact(x[i]);
        ASSERT_NEAR(y[i], ref, 1e-6 * std::fabs(ref) + 1e-30) << "x=" << x[i];
      }
    }
  }
}

}  // namespace
}  // namespace quill
