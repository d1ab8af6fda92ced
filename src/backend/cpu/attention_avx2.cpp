// AVX2 flash-attention tile (see attention.cpp for the layout), the AVX-512 kernel's scheme on
// 16 ymm registers: a query tile of 64 is worked in four 16-query chunks (two ymm each), and both
// products are register-blocked outer products,
//   S^T[j][chunk] = sum_d K[j, d] * Q^T[d][chunk]    6 keys x 16 queries (12 accumulators)
//   O^T[d][chunk] += sum_j V[j, d] * P^T[j][chunk]   6 dims x 16 queries (12 accumulators)
// each FMA taking a broadcast K or V element against a query vector, with K and V read from the
// thread's packed copy of the head (attention_pack_head). The plain-loop tile the compiler
// vectorised (attention_generic.inl) did one key or one dim at a time: a load per FMA.
#if defined(__x86_64__)
#include <immintrin.h>

#include <cstring>

#include "backend/cpu/kernels.h"
#include "backend/cpu/vec_math.h"

namespace quill::cpu::avx2 {

namespace {

constexpr int64_t Q = kAttnQTile;
static_assert(Q == 64, "a query tile is four 16-query chunks");
constexpr int kChunks = 4;  // 16-query chunks per tile, two ymm each
constexpr int kV = 8;       // ymm vectors per query tile
constexpr int kJB = 6;      // keys per S^T block
constexpr int kDB = 6;      // head dims per O^T block

struct Layout {
  float *Qt, *Ot, *St, *Kp, *Vp;
};

// Per-thread scratch: the tile buffers, then the current head's K and V, packed.
Layout layout(float* ws, int64_t Dh, int64_t Skv) {
  Layout l;
  l.Qt = ws;                     // [Dh][Q]
  l.Ot = l.Qt + Dh * Q;          // [Dh][Q]
  l.St = l.Ot + Dh * Q;          // [Ktile][Q]
  l.Kp = l.St + kAttnKTile * Q;  // [Skv][Dh]: rows contiguous (in q, k they are H * Dh apart)
  l.Vp = l.Kp + Skv * Dh;        // [ceil(Dh / kDB)][Skv][kDB]: each PV pass streams one block
  return l;
}

// St[jj][chunk c] = K[jj, :] . Qt[:][chunk c] for jj < JB keys; folds them into the running max.
template <int JB>
inline void qk_block(const float* Qt, int64_t Dh, const float* k0, float* St, __m256* mx) {
  for (int c = 0; c < kChunks; ++c) {
    __m256 acc[JB][2];
#pragma GCC unroll 8
    for (int j = 0; j < JB; ++j) acc[j][0] = acc[j][1] = _mm256_setzero_ps();
    const float* qc = Qt + 16 * c;
    for (int64_t d = 0; d < Dh; ++d) {
      const __m256 q0 = _mm256_loadu_ps(qc + d * Q), q1 = _mm256_loadu_ps(qc + d * Q + 8);
#pragma GCC unroll 8
      for (int j = 0; j < JB; ++j) {
        const __m256 kb = _mm256_broadcast_ss(k0 + j * Dh + d);
        acc[j][0] = _mm256_fmadd_ps(kb, q0, acc[j][0]);
        acc[j][1] = _mm256_fmadd_ps(kb, q1, acc[j][1]);
      }
    }
#pragma GCC unroll 8
    for (int j = 0; j < JB; ++j) {
      _mm256_storeu_ps(St + j * Q + 16 * c, acc[j][0]);
      _mm256_storeu_ps(St + j * Q + 16 * c + 8, acc[j][1]);
      mx[2 * c] = _mm256_max_ps(mx[2 * c], acc[j][0]);
      mx[2 * c + 1] = _mm256_max_ps(mx[2 * c + 1], acc[j][1]);
    }
  }
}

// Ot[dd][:] = alpha * Ot[dd][:] + sum_j V[j, dd] * P[j][:] for dd < DB head dims; Vb points at
// this key tile in one kDB-wide column block of the packed V (kDB floats per key).
template <int DB>
inline void pv_block(const float* P, int64_t nk, const float* Vb, float* Ot, const __m256* alpha) {
  for (int c = 0; c < kChunks; ++c) {
    __m256 acc[DB][2];
#pragma GCC unroll 8
    for (int dd = 0; dd < DB; ++dd) {
      acc[dd][0] = _mm256_mul_ps(_mm256_loadu_ps(Ot + dd * Q + 16 * c), alpha[2 * c]);
      acc[dd][1] = _mm256_mul_ps(_mm256_loadu_ps(Ot + dd * Q + 16 * c + 8), alpha[2 * c + 1]);
    }
    const float* pc = P + 16 * c;
    for (int64_t j = 0; j < nk; ++j) {
      const __m256 p0 = _mm256_loadu_ps(pc + j * Q), p1 = _mm256_loadu_ps(pc + j * Q + 8);
#pragma GCC unroll 8
      for (int dd = 0; dd < DB; ++dd) {
        const __m256 vb = _mm256_broadcast_ss(Vb + j * kDB + dd);
        acc[dd][0] = _mm256_fmadd_ps(vb, p0, acc[dd][0]);
        acc[dd][1] = _mm256_fmadd_ps(vb, p1, acc[dd][1]);
      }
    }
#pragma GCC unroll 8
    for (int dd = 0; dd < DB; ++dd) {
      _mm256_storeu_ps(Ot + dd * Q + 16 * c, acc[dd][0]);
      _mm256_storeu_ps(Ot + dd * Q + 16 * c + 8, acc[dd][1]);
    }
  }
}

template <int N, template <int> class Op, typename... Args>
inline void dispatch_remainder(int n, Args&&... args) {
  if constexpr (N > 0) {
    if (n == N) return Op<N>::run(args...);
    dispatch_remainder<N - 1, Op>(n, args...);
  }
}
template <int JB>
struct QkOp {
  static void run(const float* Qt, int64_t Dh, const float* k0, float* St, __m256* mx) {
    qk_block<JB>(Qt, Dh, k0, St, mx);
  }
};
template <int DB>
struct PvOp {
  static void run(const float* P, int64_t nk, const float* Vb, float* Ot, const __m256* alpha) {
    pv_block<DB>(P, nk, Vb, Ot, alpha);
  }
};

}  // namespace

void attention_pack_head(const AttentionArgs& a, int64_t bh, float* ws) {
  const int64_t Dh = a.Dh, row = a.H * a.Dh, Skv = a.Skv;
  const int64_t b = bh / a.H, h = bh % a.H;
  const float* kb = a.k + (b * Skv * a.H + h) * Dh;
  const float* vb = a.v + (b * Skv * a.H + h) * Dh;
  const Layout L = layout(ws, Dh, Skv);
  for (int64_t j = 0; j < Skv; ++j) std::memcpy(L.Kp + j * Dh, kb + j * row, size_t(Dh) * sizeof(float));
  for (int64_t d = 0; d < Dh; d += kDB) {
    const int64_t w = Dh - d < kDB ? Dh - d : kDB;
    float* dst = L.Vp + (d / kDB) * Skv * kDB;
    for (int64_t j = 0; j < Skv; ++j) std::memcpy(dst + j * kDB, vb + j * row + d, size_t(w) * sizeof(float));
  }
}

void attention_tile(const AttentionArgs& a, int64_t item, float* ws) {
  const int64_t Dh = a.Dh, row = a.H * a.Dh, Skv = a.Skv;
  const int64_t nqt = attention_query_tiles(a.Sq);
  const int64_t qt = item % nqt, h = (item / nqt) % a.H, b = item / nqt / a.H;
  const int64_t q0 = qt * Q, nq = a.Sq - q0 < Q ? a.Sq - q0 : Q;
  const float* qb = a.q + (b * a.Sq * a.H + h) * Dh + q0 * row;
  float* ob = a.out + (b * a.Sq * a.H + h) * Dh + q0 * row;
  const Layout L = layout(ws, Dh, Skv);

  // Q^T, scaled so the softmax can use exp2; queries past nq are 0.
  const float qscale = a.scale * vmath::kLog2e;
  for (int64_t i = 0; i < Q; ++i)
    for (int64_t d = 0; d < Dh; ++d) L.Qt[d * Q + i] = i < nq ? qb[i * row + d] * qscale : 0.0f;
  std::memset(L.Ot, 0, size_t(Dh * Q) * sizeof(float));

  __m256 m[kV], l[kV];
  for (int v = 0; v < kV; ++v) {
    m[v] = _mm256_set1_ps(-__builtin_inff());
    l[v] = _mm256_setzero_ps();
  }

  for (int64_t k0 = 0; k0 < Skv; k0 += kAttnKTile) {
    const int64_t nk = Skv - k0 < kAttnKTile ? Skv - k0 : kAttnKTile;

    // S^T = K Q^T and its column max.
    __m256 mx[kV];
    for (int v = 0; v < kV; ++v) mx[v] = m[v];
    int64_t j = 0;
    for (; j + kJB <= nk; j += kJB) qk_block<kJB>(L.Qt, Dh, L.Kp + (k0 + j) * Dh, L.St + j * Q, mx);
    dispatch_remainder<kJB - 1, QkOp>(int(nk - j), L.Qt, Dh, L.Kp + (k0 + j) * Dh, L.St + j * Q, mx);

    // P = exp2(S - m_new), l = alpha l + rowsum(P), alpha = exp2(m_old - m_new).
    __m256 alpha[kV], sum[kV];
    for (int v = 0; v < kV; ++v) {
      alpha[v] = vmath::exp2_approx(_mm256_sub_ps(m[v], mx[v]));
      sum[v] = _mm256_setzero_ps();
      m[v] = mx[v];
    }
    for (int64_t jj = 0; jj < nk; ++jj)
      for (int v = 0; v < kV; ++v) {
        float* s = L.St + jj * Q + 8 * v;
        const __m256 p = vmath::exp2_approx(_mm256_sub_ps(_mm256_loadu_ps(s), m[v]));
        _mm256_storeu_ps(s, p);
        sum[v] = _mm256_add_ps(sum[v], p);
      }
    for (int v = 0; v < kV; ++v) l[v] = _mm256_fmadd_ps(l[v], alpha[v], sum[v]);

    // O^T = alpha O^T + V^T P^T.
    int64_t d = 0;
    for (; d + kDB <= Dh; d += kDB)
      pv_block<kDB>(L.St, nk, L.Vp + (d / kDB) * Skv * kDB + k0 * kDB, L.Ot + d * Q, alpha);
    dispatch_remainder<kDB - 1, PvOp>(int(Dh - d), L.St, nk, L.Vp + (d / kDB) * Skv * kDB + k0 * kDB, L.Ot + d * Q,
                                      alpha);
  }

  // out = O / l, back to token-major.
  alignas(32) float inv_l[Q];
  for (int v = 0; v < kV; ++v) _mm256_store_ps(inv_l + 8 * v, _mm256_div_ps(_mm256_set1_ps(1.0f), l[v]));
  for (int64_t i = 0; i < nq; ++i)
    for (int64_t d = 0; d < Dh; ++d) ob[i * row + d] = L.Ot[d * Q + i] * inv_l[i];
}

}  // namespace quill::cpu::avx2
#endif
