// Shared helpers for tests: relative error, random data, NaN-poisoned buffers, fixture paths.
#pragma once

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <string>
#include <vector>

namespace quill::test {

// ||a - b|| / ||b|| (L2), the parity metric used against reference outputs; infinity on any NaN
// (or a size mismatch), so a poisoned output can never pass.
inline double rel_l2(const float* a, const float* b, size_t n) {
  double num = 0, den = 0;
  for (size_t i = 0; i < n; ++i) {
    if (std::isnan(a[i]) || std::isnan(b[i])) return INFINITY;
    const double d = double(a[i]) - double(b[i]);
    num += d * d;
    den += double(b[i]) * double(b[i]);
  }
  return std::sqrt(num / (den > 0 ? den : 1e-300));
}
inline double rel_l2(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() ? rel_l2(a.data(), b.data(), a.size()) : INFINITY;
}

// max |a - b| / max |b|; infinity on a size mismatch or any NaN.
inline double rel_max(const std::vector<float>& a, const std::vector<float>& b) {
  if (a.size() != b.size()) return INFINITY;
  double mx = 0, ref = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    if (std::isnan(a[i]) || std::isnan(b[i])) return INFINITY;
    mx = std::max(mx, std::fabs(double(a[i]) - double(b[i])));
    ref = std::max(ref, std::fabs(double(b[i])));
  }
  return mx / (ref > 0 ? ref : 1e-300);
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

inline std::vector<float> random_normal(size_t n, uint32_t seed, float stddev = 1.0f, float mean = 0.0f) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> d(mean, stddev);
  std::vector<float> v(n);
  for (auto& x : v) x = d(rng);
  return v;
}

// Output buffers start as NaN so a kernel that skips an element fails the comparison.
inline std::vector<float> nan_filled(size_t n) {
  return std::vector<float>(n, std::numeric_limits<float>::quiet_NaN());
}

inline std::string fixture(const std::string& rel) { return std::string(QUILL_FIXTURES_DIR) + "/" + rel; }

}  // namespace quill::test
