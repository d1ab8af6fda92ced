// Causal / padded attention with grouped KV heads (OpBackend::masked_attention) for text encoders:
// one query row at a time, its scores in this thread's row of the scratch, softmax in f32 with the
// row max subtracted, as torch's eager attention computes it.
#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstring>

#include "backend/cpu/ops.h"

namespace quill::cpu {

size_t masked_attention_scratch_floats(int64_t S, const ThreadPool& pool) {
  return size_t(S) * size_t(pool.num_threads());
}

void masked_attention(const float* q, const float* k, const float* v, float* out, int64_t B, int64_t S, int64_t H,
                      int64_t Hkv, int64_t Dh, float scale, const int32_t* valid, bool causal, float* scratch,
                      ThreadPool& pool) {
  const int64_t group = H / Hkv, rows = B * S * H;
  std::atomic<int64_t> next{0};
  constexpr int64_t kGrain = 16;
  pool.run_on_all([&](int tid) {
    float* p = scratch + size_t(tid) * size_t(S);
    for (int64_t r0; (r0 = next.fetch_add(kGrain)) < rows;) {
      for (int64_t r = r0; r < std::min(rows, r0 + kGrain); ++r) {
        const int64_t h = r % H, i = (r / H) % S, b = r / H / S;
        const int64_t kv = h / group;
        const int64_t limit = causal ? std::min<int64_t>(i + 1, valid[b]) : int64_t(valid[b]);
        const float* qi = q + ((b * S + i) * H + h) * Dh;
        float mx = -INFINITY;
        for (int64_t j = 0; j < limit; ++j) {
          const float* kj = k + ((b * S + j) * Hkv + kv) * Dh;
          float dot = 0.0f;
          for (int64_t d = 0; d < Dh; ++d) dot += qi[d] * kj[d];
          p[j] = dot * scale;
          mx = std::max(mx, p[j]);
        }
        float sum = 0.0f;
        for (int64_t j = 0; j < limit; ++j) {
          p[j] = std::exp(p[j] - mx);
          sum += p[j];
        }
        float* o = out + ((b * S + i) * H + h) * Dh;
        std::memset(o, 0, size_t(Dh) * sizeof(float));
        const float inv = 1.0f / sum;
        for (int64_t j = 0; j < limit; ++j) {
          const float w = p[j] * inv;
          const float* vj = v + ((b * S + j) * Hkv + kv) * Dh;
          for (int64_t d = 0; d < Dh; ++d) o[d] += w * vj[d];
        }
      }
    }
  });
}

}  // namespace quill::cpu
