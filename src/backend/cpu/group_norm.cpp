#include "backend/cpu/group_norm.h"

#include <cmath>

namespace quill::cpu {
namespace {

// Mean and biased variance of n values, two passes (no cancellation when |mean| >> std).
void moments(const float* x, int64_t n, int64_t stride, int64_t rows, double& mean, double& var) {
  double s = 0;
  for (int64_t r = 0; r < rows; ++r) {
    const float* p = x + r * stride;
    double rs = 0;
    for (int64_t i = 0; i < n; ++i) rs += p[i];
    s += rs;
  }
  const double count = double(n) * double(rows);
  mean = s / count;
  double q = 0;
  for (int64_t r = 0; r < rows; ++r) {
    const float* p = x + r * stride;
    double rq = 0;
    for (int64_t i = 0; i < n; ++i) {
      const double d = p[i] - mean;
      rq += d * d;
    }
    q += rq;
  }
  var = q / count;
}

}  // namespace

void group_norm(const float* x, float* y, int64_t N, int64_t C, int64_t HW, int64_t groups, float eps,
                const float* gamma, const float* beta, bool silu, ThreadPool& pool) {
  const int64_t cpg = C / groups;
  // One (sample, group) per task: its statistics, then its channels normalised in place.
  pool.parallel_for(N * groups, 1, [&](int64_t u0, int64_t u1) {
    for (int64_t u = u0; u < u1; ++u) {
      const int64_t n = u / groups, g = u % groups;
      const float* xg = x + (n * C + g * cpg) * HW;
      float* yg = y + (n * C + g * cpg) * HW;
      double mean, var;
      moments(xg, HW, HW, cpg, mean, var);
      const double rstd = 1.0 / std::sqrt(var + double(eps));
      for (int64_t cc = 0; cc < cpg; ++cc) {
        const int64_t c = g * cpg + cc;
        // y = x * a + b with a = rstd * gamma, b = beta - mean * a.
        const double a = rstd * (gamma ? gamma[c] : 1.0f);
        const float af = float(a), bf = float((beta ? beta[c] : 0.0f) - mean * a);
        const float* xp = xg + cc * HW;
        float* yp = yg + cc * HW;
        if (silu) {
          for (int64_t i = 0; i < HW; ++i) yp[i] = silu_f32(xp[i] * af + bf);
        } else {
          for (int64_t i = 0; i < HW; ++i) yp[i] = xp[i] * af + bf;
        }
      }
    }
  });
}

void group_norm_naive(const float* x, float* y, int64_t N, int64_t C, int64_t HW, int64_t groups, float eps,
                      const float* gamma, const float* beta, bool silu) {
  const int64_t cpg = C / groups, count = cpg * HW;
  for (int64_t n = 0; n < N; ++n)
    for (int64_t g = 0; g < groups; ++g) {
      const float* xg = x + (n * C + g * cpg) * HW;
      double s = 0, q = 0;
      for (int64_t i = 0; i < count; ++i) s += xg[i];
      const double mean = s / double(count);
      for (int64_t i = 0; i < count; ++i) q += (xg[i] - mean) * (xg[i] - mean);
      const double var = q / double(count);
      for (int64_t i = 0; i < count; ++i) {
        const int64_t c = g * cpg + i / HW;
        double v = (xg[i] - mean) / std::sqrt(var + double(eps));
        if (gamma) v *= gamma[c];
        if (beta) v += beta[c];
        if (silu) v = v / (1.0 + std::exp(-v));
        y[(n * C + g * cpg) * HW + i] = float(v);
      }
    }
}

}  // namespace quill::cpu
