// Helpers for the VAE and scheduler tests: random data, error metrics, NaN-poisoned buffers.
#pragma once

#include <cmath>
#include <limits>
#include <random>
#include <string>
#include <vector>

namespace quill::vaetest {

inline std::vector<float> randn(size_t n, uint32_t seed, float stddev = 1.0f, float mean = 0.0f) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> d(mean, stddev);
  std::vector<float> v(n);
  for (auto& x : v) x = d(rng);
  return v;
}

inline std::vector<float> poisoned(size_t n) { return std::vector<float>(n, std::numeric_limits<float>::quiet_NaN()); }

// ||a - b|| / ||b||; infinity on a size mismatch or any NaN.
inline double rel_l2(const std::vector<float>& a, const std::vector<float>& b) {
  if (a.size() != b.size()) return INFINITY;
  double num = 0, den = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    if (std::isnan(a[i]) || std::isnan(b[i])) return INFINITY;
    const double d = double(a[i]) - double(b[i]);
    num += d * d;
    den += double(b[i]) * double(b[i]);
  }
  return std::sqrt(num / (den > 0 ? den : 1e-300));
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

inline std::string fixture(const std::string& rel) { return std::string(QUILL_FIXTURES_DIR) + "/" + rel; }

}  // namespace quill::vaetest
