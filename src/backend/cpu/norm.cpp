// Row normalisations and the gated residual, threaded over rows.
//
// Statistics are two-pass (mean, then the mean of squared deviations) with 16 independent
// partial sums: the compiler vectorises that without -ffast-math, and the partial sums behave like
// a short pairwise summation, so f32 accumulation stays within ~1e-7 relative of a double
// reference for the row lengths of a DiT (D up to a few thousand).
#include <cmath>

#include "backend/cpu/ops.h"

namespace quill::cpu {

namespace {

constexpr int kLanes = 16;

float reduce_lanes(float* acc) {
  for (int w = kLanes / 2; w > 0; w /= 2)
    for (int l = 0; l < w; ++l) acc[l] += acc[l + w];
  return acc[0];
}

float row_sum(const float* x, int64_t n) {
  float acc[kLanes] = {};
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes)
    for (int l = 0; l < kLanes; ++l) acc[l] += x[i + l];
  for (int l = 0; i < n; ++i, ++l) acc[l] += x[i];
  return reduce_lanes(acc);
}

// sum((x - c)^2)
float row_sq_dev(const float* x, int64_t n, float c) {
  float acc[kLanes] = {};
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes)
    for (int l = 0; l < kLanes; ++l) {
      const float d = x[i + l] - c;
      acc[l] += d * d;
    }
  for (int l = 0; i < n; ++i, ++l) {
    const float d = x[i] - c;
    acc[l] += d * d;
  }
  return reduce_lanes(acc);
}

// mean = m0 + m1: m0 is the rounded f32 mean, m1 = mean(x - m0) corrects its rounding error, so
// (x - m0) - m1 is accurate even when |mean| >> std (an f32 mean alone is off by up to half an
// ulp of the mean, i.e. 2e-6 std for mean = 50, std = 2).
struct RowStats {
  float m0, m1, rstd;
};

RowStats layer_norm_stats(const float* x, int64_t D, float eps) {
  const float m0 = row_sum(x, D) / float(D);
  float acc[kLanes] = {}, acc2[kLanes] = {};
  int64_t i = 0;
  for (; i + kLanes <= D; i += kLanes)
    for (int l = 0; l < kLanes; ++l) {
      const float d = x[i + l] - m0;
      acc[l] += d;
      acc2[l] += d * d;
    }
  for (int l = 0; i < D; ++i, ++l) {
    const float d = x[i] - m0;
    acc[l] += d;
    acc2[l] += d * d;
  }
  const float m1 = reduce_lanes(acc) / float(D);
  float var = reduce_lanes(acc2) / float(D) - m1 * m1;
  var = var > 0.0f ? var : 0.0f;
  return {m0, m1, 1.0f / std::sqrt(var + eps)};
}

// Rows per task so one task touches at least ~16K floats.
int64_t row_grain(int64_t D) { return D >= (1 << 14) ? 1 : (1 << 14) / (D > 0 ? D : 1); }

}  // namespace

void layer_norm(const float* x, float* y, int64_t rows, int64_t D, float eps, const float* w, const float* b,
                ThreadPool& pool) {
  pool.parallel_for(rows, row_grain(D), [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      const float* xr = x + r * D;
      float* yr = y + r * D;
      const RowStats s = layer_norm_stats(xr, D, eps);
      if (w && b) {
        for (int64_t i = 0; i < D; ++i) yr[i] = (xr[i] - s.m0 - s.m1) * s.rstd * w[i] + b[i];
      } else if (w) {
        for (int64_t i = 0; i < D; ++i) yr[i] = (xr[i] - s.m0 - s.m1) * s.rstd * w[i];
      } else if (b) {
        for (int64_t i = 0; i < D; ++i) yr[i] = (xr[i] - s.m0 - s.m1) * s.rstd + b[i];
      } else {
        for (int64_t i = 0; i < D; ++i) yr[i] = (xr[i] - s.m0 - s.m1) * s.rstd;
      }
    }
  });
}

void layer_norm_modulate(const float* x, float* y, int64_t B, int64_t S, int64_t D, float eps, const float* shift,
                         const float* scale, int64_t mod_stride, ThreadPool& pool) {
  pool.parallel_for(B * S, row_grain(D), [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      const float* xr = x + r * D;
      float* yr = y + r * D;
      const float* sh = shift + (r / S) * mod_stride;
      const float* sc = scale + (r / S) * mod_stride;
      const RowStats s = layer_norm_stats(xr, D, eps);
      for (int64_t i = 0; i < D; ++i) yr[i] = (xr[i] - s.m0 - s.m1) * s.rstd * (1.0f + sc[i]) + sh[i];
    }
  });
}

void rms_norm(const float* x, float* y, int64_t rows, int64_t D, float eps, const float* w, ThreadPool& pool) {
  pool.parallel_for(rows, row_grain(D), [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      const float* xr = x + r * D;
      float* yr = y + r * D;
      const float rstd = 1.0f / std::sqrt(row_sq_dev(xr, D, 0.0f) / float(D) + eps);
      if (w) {
        for (int64_t i = 0; i < D; ++i) yr[i] = xr[i] * rstd * w[i];
      } else {
        for (int64_t i = 0; i < D; ++i) yr[i] = xr[i] * rstd;
      }
    }
  });
}

void gated_residual(float* x, const float* y, const float* gate, int64_t B, int64_t S, int64_t D, int64_t gate_stride,
                    ThreadPool& pool) {
  pool.parallel_for(B * S, row_grain(D), [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      float* xr = x + r * D;
      const float* yr = y + r * D;
      const float* g = gate + (r / S) * gate_stride;
      for (int64_t i = 0; i < D; ++i) xr[i] += g[i] * yr[i];
    }
  });
}

}  // namespace quill::cpu
