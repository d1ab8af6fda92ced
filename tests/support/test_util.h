// Shared helpers for tests: relative error, random data, fixture paths.
#pragma once

#include <cmath>
#include <random>
#include <string>
#include <vector>

namespace quill::test {

// ||a - b|| / ||b|| (L2), the parity metric used against reference outputs.
inline double rel_l2(const float* a, const float* b, size_t n) {
  double num = 0, den = 0;
  for (size_t i = 0; i < n; ++i) {
    const double d = double(a[i]) - double(b[i]);
    num += d * d;
    den += double(b[i]) * double(b[i]);
  }
  return std::sqrt(num / (den > 0 ? den : 1e-300));
}
inline double rel_l2(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() ? rel_l2(a.data(), b.data(), a.size()) : INFINITY;
}

inline double cosine(const std::vector<float>& a, const std::vector<float>& b) {
  double ab = 0, aa = 0, bb = 0;
  for (size_t i = 0; i < a.size() && i < b.size(); ++i) {
    ab += double(a[i]) * b[i];
    aa += double(a[i]) * a[i];
    bb += double(b[i]) * b[i];
  }
  return ab / std::sqrt(aa * bb + 1e-300);
}

inline std::vector<float> random_normal(size_t n, uint32_t seed, float stddev = 1.0f) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> d(0.0f, stddev);
  std::vector<float> v(n);
  for (auto& x : v) x = d(rng);
  return v;
}

inline std::string fixture(const std::string& rel) { return std::string(QUILL_FIXTURES_DIR) + "/" + rel; }

}  // namespace quill::test
