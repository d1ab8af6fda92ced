#include "backend/cpu/spatial_attention.h"

#include <algorithm>
#include <cmath>
#include <vector>

namespace quill::cpu {

size_t spatial_attention_scratch_floats(int64_t T) { return size_t(std::min(T, kSpatialAttentionTile) * T); }

void spatial_attention(const float* q, const float* k, const float* v, float* out, int64_t C, int64_t T, float scale,
                       float* scratch, ThreadPool& pool, GemmImpl gemm) {
  for (int64_t t0 = 0; t0 < T; t0 += kSpatialAttentionTile) {
    const int64_t tq = std::min(kSpatialAttentionTile, T - t0);
    float* S = scratch;  // [tq, T]
    // S = scale * q[:, t0:t0+tq]^T . k
    gemm_f32(true, false, tq, T, C, scale, q + t0, T, k, T, 0.0f, S, T, pool, gemm);
    pool.parallel_for(tq, 8, [&](int64_t r0, int64_t r1) {
      for (int64_t r = r0; r < r1; ++r) {
        float* s = S + r * T;
        float mx = s[0];
        for (int64_t j = 1; j < T; ++j) mx = std::max(mx, s[j]);
        double sum = 0;
        for (int64_t j = 0; j < T; ++j) {
          s[j] = std::exp(s[j] - mx);
          sum += s[j];
        }
        const float inv = float(1.0 / sum);
        for (int64_t j = 0; j < T; ++j) s[j] *= inv;
      }
    });
    // out[:, t0:t0+tq] = v . S^T
    gemm_f32(false, true, C, tq, T, 1.0f, v, T, S, T, 0.0f, out + t0, T, pool, gemm);
  }
}

void spatial_attention_naive(const float* q, const float* k, const float* v, float* out, int64_t C, int64_t T,
                             float scale) {
  std::vector<double> p(static_cast<size_t>(T));
  for (int64_t t = 0; t < T; ++t) {
    double mx = -INFINITY;
    for (int64_t s = 0; s < T; ++s) {
      double d = 0;
      for (int64_t c = 0; c < C; ++c) d += double(q[c * T + t]) * k[c * T + s];
      p[size_t(s)] = d * scale;
      mx = std::max(mx, p[size_t(s)]);
    }
    double sum = 0;
    for (auto& e : p) sum += (e = std::exp(e - mx));
    for (int64_t c = 0; c < C; ++c) {
      double acc = 0;
      for (int64_t s = 0; s < T; ++s) acc += p[size_t(s)] * v[c * T + s];
      out[c * T + t] = float(acc / sum);
    }
  }
}

}  // namespace quill::cpu
