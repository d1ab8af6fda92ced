// Causal / padded attention with grouped KV heads (OpBackend::masked_attention) for text encoders.
// Per (batch, head): scores = scale Q K^T as one GEMM straight from the strided [S, H, Dh] layout
// (each head reads its KV head in place, no repeat_kv copy), a masked softmax per row in f32 with
// the row max subtracted (as torch's eager attention), then out = P V as a second GEMM. A causal
// mask wastes the upper triangle of the first GEMM; the GEMMs' speed is worth more than that.
#include <algorithm>
#include <cmath>
#include <cstring>

#include "backend/cpu/gemm.h"
#include "backend/cpu/ops.h"
#include "backend/cpu/vec_math.h"

namespace quill::cpu {

size_t masked_attention_scratch_floats(int64_t S, const ThreadPool&) { return size_t(S) * size_t(S); }

void masked_attention(const float* q, const float* k, const float* v, float* out, int64_t B, int64_t S, int64_t H,
                      int64_t Hkv, int64_t Dh, float scale, const int32_t* valid, bool causal, float* scratch,
                      ThreadPool& pool) {
  const int64_t group = H / Hkv, q_ld = H * Dh, kv_ld = Hkv * Dh;
  float* P = scratch;  // [S, S]
  for (int64_t b = 0; b < B; ++b)
    for (int64_t h = 0; h < H; ++h) {
      const float* qh = q + b * S * q_ld + h * Dh;
      const float* kh = k + b * S * kv_ld + (h / group) * Dh;
      const float* vh = v + b * S * kv_ld + (h / group) * Dh;
      const int64_t n = valid[b];
      // Only keys j < n are ever read: the GEMMs skip the padded tail.
      gemm_f32(false, true, S, n, Dh, scale, qh, q_ld, kh, kv_ld, 0.0f, P, S, pool);
      pool.parallel_for(S, 8, [&](int64_t i0, int64_t i1) {
        for (int64_t i = i0; i < i1; ++i) {
          float* p = P + i * S;
          const int64_t limit = causal ? std::min<int64_t>(i + 1, n) : n;
          float mx = -INFINITY;
          for (int64_t j = 0; j < limit; ++j) mx = std::max(mx, p[j]);
          float sum = 0.0f;
          for (int64_t j = 0; j < limit; ++j) {
            p[j] = vmath::exp_approx(p[j] - mx);
            sum += p[j];
          }
          const float inv = 1.0f / sum;
          for (int64_t j = 0; j < limit; ++j) p[j] *= inv;
          for (int64_t j = limit; j < n; ++j) p[j] = 0.0f;
        }
      });
      gemm_f32(false, false, S, Dh, n, 1.0f, P, S, vh, kv_ld, 0.0f, out + b * S * q_ld + h * Dh, q_ld, pool);
    }
}

}  // namespace quill::cpu
