// Multi-head attention: the flash-style driver and the naive reference (tile kernels:
// attention_avx512.cpp, attention_avx2.cpp, and the portable one in attention_generic.inl, built
// for baseline x86-64 here).
//
// Work item = (batch, head, query tile of kAttnQTile queries). A thread owns one item at a time and
// walks the keys in tiles of kAttnKTile with an online softmax (running max m and sum l per
// query): no score matrix is ever stored. Scratch per thread is one tile plus a packed copy of
// the current head's K and V (O(Skv * Dh), 2 MB at Skv = 4096, Dh = 64): re-used by every query
// tile of that head, it turns K / V reads into sequential streams (1.2x faster than reading the
// strided [B, S, H, Dh] layout directly, measured at S = 1024).
//
// Every tile kernel keeps queries in the SIMD lanes: Q^T [Dh][Qtile] (pre-scaled by
// scale * log2 e, so exp2 is the softmax exponent), S^T = K Q^T [Ktile][Qtile] and
// O^T [Dh][Qtile]. Keys and head dimensions are loop indices, never lanes, so a partial key tile
// needs no masking and the running max, sum and rescale are plain vertical vector ops.
#include "backend/cpu/ops.h"

#include <atomic>
#include <cmath>
#include <limits>
#include <vector>

#include "backend/cpu/kernel_table.h"
#include "backend/cpu/kernels.h"
#include "backend/cpu/vec_math.h"

#define QUILL_ATTENTION_GENERIC_NS scalar
#include "backend/cpu/attention_generic.inl"
#undef QUILL_ATTENTION_GENERIC_NS

namespace quill::cpu {

size_t attention_scratch_floats(int64_t Skv, int64_t Dh, const ThreadPool& pool) {
  return size_t(pool.num_threads()) * size_t(attention_thread_scratch_floats(Skv, Dh));
}

void attention(const float* q, const float* k, const float* v, float* out, int64_t B, int64_t Sq, int64_t Skv,
               int64_t H, int64_t Dh, float scale, float* scratch, ThreadPool& pool) {
  if (B <= 0 || Sq <= 0 || H <= 0 || Dh <= 0) return;
  if (Skv <= 0) {  // softmax over nothing: define the result as 0 rather than 0/0
    for (int64_t i = 0; i < B * Sq * H * Dh; ++i) out[i] = 0.0f;
    return;
  }
  const KernelTable& kernels = kernel_table();
  const AttentionPackFn pack = kernels.attention_pack;
  const AttentionTileFn tile = kernels.attention_tile;
  const AttentionArgs args{q, k, v, out, B, Sq, Skv, H, Dh, scale};
  const int64_t nqt = attention_query_tiles(Sq);
  const int64_t items = B * H * nqt;
  const int64_t per_thread = attention_thread_scratch_floats(Skv, Dh);
  // Chunks of consecutive items (query tiles of one head), about 8 per thread, so a thread packs
  // each head it works on about once, and uneven progress still balances.
  int64_t chunk = items / (int64_t(pool.num_threads()) * 8);
  chunk = chunk < 1 ? 1 : chunk > nqt ? nqt : chunk;
  const int64_t chunks = (items + chunk - 1) / chunk;
  std::atomic<int64_t> next{0};
  pool.run_on_all([&](int t) {
    float* ws = scratch + int64_t(t) * per_thread;
    int64_t packed = -1;
    for (int64_t c = next.fetch_add(1, std::memory_order_relaxed); c < chunks;
         c = next.fetch_add(1, std::memory_order_relaxed)) {
      const int64_t end = (c + 1) * chunk < items ? (c + 1) * chunk : items;
      for (int64_t i = c * chunk; i < end; ++i) {
        if (pack && i / nqt != packed) {
          packed = i / nqt;
          pack(args, packed, ws);
        }
        tile(args, i, ws);
      }
    }
  });
}

void attention_naive(const float* q, const float* k, const float* v, float* out, int64_t B, int64_t Sq, int64_t Skv,
                     int64_t H, int64_t Dh, float scale) {
  const int64_t row = H * Dh;
  std::vector<float> p(static_cast<size_t>(Skv));
  for (int64_t b = 0; b < B; ++b)
    for (int64_t h = 0; h < H; ++h)
      for (int64_t i = 0; i < Sq; ++i) {
        const float* qi = q + (b * Sq + i) * row + h * Dh;
        float mx = -std::numeric_limits<float>::infinity();
        for (int64_t j = 0; j < Skv; ++j) {
          const float* kj = k + (b * Skv + j) * row + h * Dh;
          // Eight partial sums: the same arithmetic a vectorised dot product does, and fast
          // enough to serve as the benchmark baseline at long sequences.
          float part[8] = {};
          int64_t d = 0;
          for (; d + 8 <= Dh; d += 8)
            for (int l = 0; l < 8; ++l) part[l] += qi[d + l] * kj[d + l];
          for (int l = 0; d < Dh; ++d, ++l) part[l] += qi[d] * kj[d];
          const float s = ((part[0] + part[4]) + (part[1] + part[5])) + ((part[2] + part[6]) + (part[3] + part[7]));
          p[size_t(j)] = s * scale;
          mx = p[size_t(j)] > mx ? p[size_t(j)] : mx;
        }
        float sum = 0.0f;
        for (int64_t j = 0; j < Skv; ++j) {
          p[size_t(j)] = std::exp(p[size_t(j)] - mx);
          sum += p[size_t(j)];
        }
        float* oi = out + (b * Sq + i) * row + h * Dh;
        for (int64_t d = 0; d < Dh; ++d) oi[d] = 0.0f;
        for (int64_t j = 0; j < Skv; ++j) {
          const float* vj = v + (b * Skv + j) * row + h * Dh;
          const float w = p[size_t(j)] / sum;
          for (int64_t d = 0; d < Dh; ++d) oi[d] += w * vj[d];
        }
      }
}

}  // namespace quill::cpu
