// AVX-512 flash-attention tile (see attention.cpp for the layout). A query tile of 64 queries is
// four zmm lanes-vectors; both products are register-blocked outer products:
//   S^T[j][:] = sum_d K[j, d] * Q^T[d][:]    6 keys x 64 queries per block (24 accumulators)
//   O^T[d][:] += sum_j V[j, d] * P^T[j][:]   6 dims x 64 queries per block (24 accumulators)
// each FMA taking a broadcast K or V element against a query vector.
#if defined(__x86_64__)
// GCC 12 flags the _mm512_undefined_ps() inside its own intrinsics as (maybe-)uninitialized.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#include <immintrin.h>

#include <cstring>

#include "backend/cpu/kernels.h"
#include "backend/cpu/vec_math.h"

namespace quill::cpu::avx512 {

namespace {

constexpr int64_t Q = kAttnQTile;
static_assert(Q == 64, "the kernels hold a query tile in four zmm registers");
constexpr int kV = 4;   // zmm vectors per query tile
constexpr int kJB = 6;  // keys per S^T block
constexpr int kDB = 6;  // head dims per O^T block

// St[jj][:] = K[jj, :] . Qt for jj < JB keys whose rows start at k0, `kstride` floats apart; folds
// the block into the running column max mx.
template <int JB>
inline void qk_block(const float* Qt, int64_t Dh, const float* k0, int64_t kstride, float* St, __m512* mx) {
  __m512 acc[JB][kV];
  for (int j = 0; j < JB; ++j)
    for (int v = 0; v < kV; ++v) acc[j][v] = _mm512_setzero_ps();
  for (int64_t d = 0; d < Dh; ++d) {
    __m512 qv[kV];
    for (int v = 0; v < kV; ++v) qv[v] = _mm512_loadu_ps(Qt + d * Q + 16 * v);
    for (int j = 0; j < JB; ++j) {
      const __m512 kb = _mm512_set1_ps(k0[j * kstride + d]);
      for (int v = 0; v < kV; ++v) acc[j][v] = _mm512_fmadd_ps(kb, qv[v], acc[j][v]);
    }
  }
  for (int j = 0; j < JB; ++j)
    for (int v = 0; v < kV; ++v) {
      _mm512_storeu_ps(St + j * Q + 16 * v, acc[j][v]);
      mx[v] = _mm512_max_ps(mx[v], acc[j][v]);
    }
}

// Ot[dd][:] = alpha * Ot[dd][:] + sum_j Vp[j, dd] * P[j][:] for dd < DB dims starting at Vp's column.
template <int DB>
inline void pv_block(const float* P, int64_t nk, const float* Vp, int64_t Dh, float* Ot, const __m512* alpha) {
  __m512 acc[DB][kV];
  for (int dd = 0; dd < DB; ++dd)
    for (int v = 0; v < kV; ++v) acc[dd][v] = _mm512_mul_ps(_mm512_loadu_ps(Ot + dd * Q + 16 * v), alpha[v]);
  for (int64_t j = 0; j < nk; ++j) {
    __m512 pv[kV];
    for (int v = 0; v < kV; ++v) pv[v] = _mm512_loadu_ps(P + j * Q + 16 * v);
    for (int dd = 0; dd < DB; ++dd) {
      const __m512 vb = _mm512_set1_ps(Vp[j * Dh + dd]);
      for (int v = 0; v < kV; ++v) acc[dd][v] = _mm512_fmadd_ps(vb, pv[v], acc[dd][v]);
    }
  }
  for (int dd = 0; dd < DB; ++dd)
    for (int v = 0; v < kV; ++v) _mm512_storeu_ps(Ot + dd * Q + 16 * v, acc[dd][v]);
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
  static void run(const float* Qt, int64_t Dh, const float* k0, int64_t ks, float* St, __m512* mx) {
    qk_block<JB>(Qt, Dh, k0, ks, St, mx);
  }
};
template <int DB>
struct PvOp {
  static void run(const float* P, int64_t nk, const float* Vp, int64_t Dh, float* Ot, const __m512* alpha) {
    pv_block<DB>(P, nk, Vp, Dh, Ot, alpha);
  }
};

}  // namespace

void attention_tile(const AttentionArgs& a, int64_t item, float* ws) {
  const int64_t Dh = a.Dh, row = a.H * a.Dh;
  const int64_t nqt = attention_query_tiles(a.Sq);
  const int64_t qt = item % nqt, h = (item / nqt) % a.H, b = item / nqt / a.H;
  const int64_t q0 = qt * Q, nq = a.Sq - q0 < Q ? a.Sq - q0 : Q;
  const float* qb = a.q + (b * a.Sq * a.H + h) * Dh;
  const float* kb = a.k + (b * a.Skv * a.H + h) * Dh;
  const float* vb = a.v + (b * a.Skv * a.H + h) * Dh;
  float* ob = a.out + (b * a.Sq * a.H + h) * Dh;

  float* Qt = ws;                   // [Dh][Q]
  float* Ot = Qt + Dh * Q;          // [Dh][Q]
  float* St = Ot + Dh * Q;          // [Ktile][Q]
  float* Vp = St + kAttnKTile * Q;  // [Ktile][Dh], this key tile's V rows, packed

  const float qscale = a.scale * vmath::kLog2e;
  for (int64_t i = 0; i < Q; ++i)
    for (int64_t d = 0; d < Dh; ++d) Qt[d * Q + i] = i < nq ? qb[(q0 + i) * row + d] * qscale : 0.0f;
  std::memset(Ot, 0, size_t(Dh * Q) * sizeof(float));

  __m512 m[kV], l[kV];
  for (int v = 0; v < kV; ++v) {
    m[v] = _mm512_set1_ps(-__builtin_inff());
    l[v] = _mm512_setzero_ps();
  }

  for (int64_t k0 = 0; k0 < a.Skv; k0 += kAttnKTile) {
    const int64_t nk = a.Skv - k0 < kAttnKTile ? a.Skv - k0 : kAttnKTile;

    // S^T = K Q^T and its column max.
    __m512 mx[kV] = {m[0], m[1], m[2], m[3]};
    int64_t j = 0;
    for (; j + kJB <= nk; j += kJB) qk_block<kJB>(Qt, Dh, kb + (k0 + j) * row, row, St + j * Q, mx);
    dispatch_remainder<kJB - 1, QkOp>(int(nk - j), Qt, Dh, kb + (k0 + j) * row, row, St + j * Q, mx);

    // P = exp2(S - m_new), l = alpha l + rowsum(P), alpha = exp2(m_old - m_new).
    __m512 alpha[kV], sum[kV];
    for (int v = 0; v < kV; ++v) {
      alpha[v] = vmath::exp2_approx(_mm512_sub_ps(m[v], mx[v]));
      sum[v] = _mm512_setzero_ps();
      m[v] = mx[v];
    }
    for (int64_t jj = 0; jj < nk; ++jj)
      for (int v = 0; v < kV; ++v) {
        float* s = St + jj * Q + 16 * v;
        const __m512 p = vmath::exp2_approx(_mm512_sub_ps(_mm512_loadu_ps(s), m[v]));
        _mm512_storeu_ps(s, p);
        sum[v] = _mm512_add_ps(sum[v], p);
      }
    for (int v = 0; v < kV; ++v) l[v] = _mm512_fmadd_ps(l[v], alpha[v], sum[v]);

    // O^T = alpha O^T + V^T P^T, V packed so the broadcasts read one contiguous block.
    for (int64_t jj = 0; jj < nk; ++jj) std::memcpy(Vp + jj * Dh, vb + (k0 + jj) * row, size_t(Dh) * sizeof(float));
    int64_t d = 0;
    for (; d + kDB <= Dh; d += kDB) pv_block<kDB>(St, nk, Vp + d, Dh, Ot + d * Q, alpha);
    dispatch_remainder<kDB - 1, PvOp>(int(Dh - d), St, nk, Vp + d, Dh, Ot + d * Q, alpha);
  }

  // out = O / l, transposed back to token-major.
  for (int v = 0; v < kV; ++v) {
    const __m512 inv = _mm512_div_ps(_mm512_set1_ps(1.0f), l[v]);
    for (int64_t d = 0; d < Dh; ++d) _mm512_storeu_ps(Ot + d * Q + 16 * v, _mm512_mul_ps(_mm512_loadu_ps(Ot + d * Q + 16 * v), inv));
  }
  for (int64_t i = 0; i < nq; ++i)
    for (int64_t d = 0; d < Dh; ++d) ob[(q0 + i) * row + d] = Ot[d * Q + i];
}

}  // namespace quill::cpu::avx512
#endif
