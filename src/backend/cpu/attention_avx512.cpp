// AVX-512 flash-attention tile (see attention.cpp for the layout). A query tile of 64 queries is
// four zmm lanes-vectors; both products are register-blocked outer products:
//   S^T[j][:] = sum_d K[j, d] * Q^T[d][:]    6 keys x 64 queries per block (24 accumulators)
//   O^T[d][:] += sum_j V[j, d] * P^T[j][:]   6 dims x 64 queries per block (24 accumulators)
// each FMA taking a broadcast K or V element against a query vector. K and V come from the per-
// thread packed copy of the head (attention_pack_head); P = exp2 uses the unclamped degree-5
// vmath::exp2_fast. Single core, S = 1024, 12 heads x 64: ~175 GFLOP/s of a 235 FMA peak.
#if defined(__x86_64__)
// GCC 12 flags the _mm512_undefined_ps() inside its own intrinsics as (maybe-)uninitialized.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#include "core/avx512_intrinsics.h"

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

// In-register 16 x 16 transpose: r[i][j] -> r[j][i].
inline void transpose16(__m512* r) {
  __m512 t[16], u[16];
  for (int k = 0; k < 8; ++k) {
    t[2 * k] = _mm512_unpacklo_ps(r[2 * k], r[2 * k + 1]);
    t[2 * k + 1] = _mm512_unpackhi_ps(r[2 * k], r[2 * k + 1]);
  }
  for (int k = 0; k < 4; ++k) {
    const __m512d a = _mm512_castps_pd(t[4 * k]), b = _mm512_castps_pd(t[4 * k + 2]);
    const __m512d c = _mm512_castps_pd(t[4 * k + 1]), d = _mm512_castps_pd(t[4 * k + 3]);
    u[4 * k + 0] = _mm512_castpd_ps(_mm512_unpacklo_pd(a, b));
    u[4 * k + 1] = _mm512_castpd_ps(_mm512_unpackhi_pd(a, b));
    u[4 * k + 2] = _mm512_castpd_ps(_mm512_unpacklo_pd(c, d));
    u[4 * k + 3] = _mm512_castpd_ps(_mm512_unpackhi_pd(c, d));
  }
  // u[4k + e], 128-bit lane L, holds column 4L + e of rows 4k..4k+3: transpose the lanes.
  for (int e = 0; e < 4; ++e) {
    const __m512 v0 = _mm512_shuffle_f32x4(u[e], u[4 + e], 0x44);
    const __m512 v1 = _mm512_shuffle_f32x4(u[e], u[4 + e], 0xee);
    const __m512 v2 = _mm512_shuffle_f32x4(u[8 + e], u[12 + e], 0x44);
    const __m512 v3 = _mm512_shuffle_f32x4(u[8 + e], u[12 + e], 0xee);
    r[e] = _mm512_shuffle_f32x4(v0, v2, 0x88);
    r[4 + e] = _mm512_shuffle_f32x4(v0, v2, 0xdd);
    r[8 + e] = _mm512_shuffle_f32x4(v1, v3, 0x88);
    r[12 + e] = _mm512_shuffle_f32x4(v1, v3, 0xdd);
  }
}

inline __mmask16 first_n(int64_t n) { return n >= 16 ? __mmask16(0xffff) : __mmask16((1u << n) - 1); }

// Qt[d][i] = src[i * stride + d] * mul for i < n (rows past n are 0), d < Dh.
void pack_transposed(const float* src, int64_t stride, int64_t n, int64_t Dh, float mul, float* Qt) {
  const __m512 vm = _mm512_set1_ps(mul);
  for (int64_t i0 = 0; i0 < Q; i0 += 16)
    for (int64_t d0 = 0; d0 < Dh; d0 += 16) {
      const __mmask16 dm = first_n(Dh - d0);
      __m512 r[16];
      for (int64_t i = 0; i < 16; ++i)
        r[i] = i0 + i < n ? _mm512_mul_ps(_mm512_maskz_loadu_ps(dm, src + (i0 + i) * stride + d0), vm)
                          : _mm512_setzero_ps();
      transpose16(r);
      for (int64_t d = 0; d < 16 && d0 + d < Dh; ++d) _mm512_storeu_ps(Qt + (d0 + d) * Q + i0, r[d]);
    }
}

// dst[i * stride + d] = Ot[d][i] * inv_l[i] for i < n, d < Dh.
void unpack_transposed(const float* Ot, const __m512* inv_l, int64_t n, int64_t Dh, float* dst, int64_t stride) {
  for (int64_t i0 = 0; i0 < n; i0 += 16)
    for (int64_t d0 = 0; d0 < Dh; d0 += 16) {
      __m512 r[16];
      for (int64_t d = 0; d < 16; ++d)
        r[d] =
            d0 + d < Dh ? _mm512_mul_ps(_mm512_loadu_ps(Ot + (d0 + d) * Q + i0), inv_l[i0 / 16]) : _mm512_setzero_ps();
      transpose16(r);
      const __mmask16 dm = first_n(Dh - d0);
      for (int64_t i = 0; i < 16 && i0 + i < n; ++i) _mm512_mask_storeu_ps(dst + (i0 + i) * stride + d0, dm, r[i]);
    }
}

// dst[j][:] = src[j * stride + :] for j < n rows of Dh floats.
void pack_rows(const float* src, int64_t stride, int64_t n, int64_t Dh, float* dst) {
  for (int64_t j = 0; j < n; ++j)
    for (int64_t d0 = 0; d0 < Dh; d0 += 16) {
      const __mmask16 dm = first_n(Dh - d0);
      _mm512_mask_storeu_ps(dst + j * Dh + d0, dm, _mm512_maskz_loadu_ps(dm, src + j * stride + d0));
    }
}

// St[jj][:] = K[jj, :] . Qt for jj < JB keys, rows of the packed K (Dh floats each); folds the
// block into the running column max mx.
template <int JB>
inline void qk_block(const float* Qt, int64_t Dh, const float* k0, float* St, __m512* mx) {
  __m512 acc[JB][kV];
  for (int j = 0; j < JB; ++j)
    for (int v = 0; v < kV; ++v) acc[j][v] = _mm512_setzero_ps();
  for (int64_t d = 0; d < Dh; ++d) {
    __m512 qv[kV];
    for (int v = 0; v < kV; ++v) qv[v] = _mm512_loadu_ps(Qt + d * Q + 16 * v);
    for (int j = 0; j < JB; ++j) {
      const __m512 kb = _mm512_set1_ps(k0[j * Dh + d]);
      for (int v = 0; v < kV; ++v) acc[j][v] = _mm512_fmadd_ps(kb, qv[v], acc[j][v]);
    }
  }
  for (int j = 0; j < JB; ++j)
    for (int v = 0; v < kV; ++v) {
      _mm512_storeu_ps(St + j * Q + 16 * v, acc[j][v]);
      mx[v] = _mm512_max_ps(mx[v], acc[j][v]);
    }
}

// Ot[dd][:] = alpha * Ot[dd][:] + sum_j V[j, dd] * P[j][:] for dd < DB head dims; Vb points at
// this key tile in one kDB-wide column block of the packed V (kDB floats per key).
template <int DB>
inline void pv_block(const float* P, int64_t nk, const float* Vb, float* Ot, const __m512* alpha) {
  __m512 acc[DB][kV];
  for (int dd = 0; dd < DB; ++dd)
    for (int v = 0; v < kV; ++v) acc[dd][v] = _mm512_mul_ps(_mm512_loadu_ps(Ot + dd * Q + 16 * v), alpha[v]);
  for (int64_t j = 0; j < nk; ++j) {
    __m512 pv[kV];
    for (int v = 0; v < kV; ++v) pv[v] = _mm512_loadu_ps(P + j * Q + 16 * v);
    for (int dd = 0; dd < DB; ++dd) {
      const __m512 vb = _mm512_set1_ps(Vb[j * kDB + dd]);
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
  static void run(const float* Qt, int64_t Dh, const float* k0, float* St, __m512* mx) {
    qk_block<JB>(Qt, Dh, k0, St, mx);
  }
};
template <int DB>
struct PvOp {
  static void run(const float* P, int64_t nk, const float* Vb, float* Ot, const __m512* alpha) {
    pv_block<DB>(P, nk, Vb, Ot, alpha);
  }
};

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

}  // namespace

void attention_pack_head(const AttentionArgs& a, int64_t bh, float* ws) {
  const int64_t Dh = a.Dh, row = a.H * a.Dh, Skv = a.Skv;
  const int64_t b = bh / a.H, h = bh % a.H;
  const float* kb = a.k + (b * Skv * a.H + h) * Dh;
  const float* vb = a.v + (b * Skv * a.H + h) * Dh;
  const Layout L = layout(ws, Dh, Skv);
  pack_rows(kb, row, Skv, Dh, L.Kp);
  for (int64_t d = 0; d < Dh; d += kDB) {
    const __mmask16 dm = first_n(Dh - d < kDB ? Dh - d : kDB);
    float* dst = L.Vp + (d / kDB) * Skv * kDB;
    for (int64_t j = 0; j < Skv; ++j)
      _mm512_mask_storeu_ps(dst + j * kDB, dm, _mm512_maskz_loadu_ps(dm, vb + j * row + d));
  }
}

void attention_tile(const AttentionArgs& a, int64_t item, float* ws) {
  const int64_t Dh = a.Dh, row = a.H * a.Dh, Skv = a.Skv;
  const int64_t nqt = attention_query_tiles(a.Sq);
  const int64_t qt = item % nqt, h = (item / nqt) % a.H, b = item / nqt / a.H;
  const int64_t q0 = qt * Q, nq = a.Sq - q0 < Q ? a.Sq - q0 : Q;
  const float* qb = a.q + (b * a.Sq * a.H + h) * Dh;
  float* ob = a.out + (b * a.Sq * a.H + h) * Dh;
  const Layout L = layout(ws, Dh, Skv);

  pack_transposed(qb + q0 * row, row, nq, Dh, a.scale * vmath::kLog2e, L.Qt);
  std::memset(L.Ot, 0, size_t(Dh * Q) * sizeof(float));

  __m512 m[kV], l[kV];
  for (int v = 0; v < kV; ++v) {
    m[v] = _mm512_set1_ps(-__builtin_inff());
    l[v] = _mm512_setzero_ps();
  }

  for (int64_t k0 = 0; k0 < Skv; k0 += kAttnKTile) {
    const int64_t nk = Skv - k0 < kAttnKTile ? Skv - k0 : kAttnKTile;

    // S^T = K Q^T and its column max.
    __m512 mx[kV] = {m[0], m[1], m[2], m[3]};
    int64_t j = 0;
    for (; j + kJB <= nk; j += kJB) qk_block<kJB>(L.Qt, Dh, L.Kp + (k0 + j) * Dh, L.St + j * Q, mx);
    dispatch_remainder<kJB - 1, QkOp>(int(nk - j), L.Qt, Dh, L.Kp + (k0 + j) * Dh, L.St + j * Q, mx);

    // P = exp2(S - m_new), l = alpha l + rowsum(P), alpha = exp2(m_old - m_new).
    __m512 alpha[kV], sum[kV];
    for (int v = 0; v < kV; ++v) {
      alpha[v] = vmath::exp2_approx(_mm512_sub_ps(m[v], mx[v]));
      sum[v] = _mm512_setzero_ps();
      m[v] = mx[v];
    }
    for (int64_t jj = 0; jj < nk; ++jj)
      for (int v = 0; v < kV; ++v) {
        float* s = L.St + jj * Q + 16 * v;
        const __m512 p = vmath::exp2_fast(_mm512_sub_ps(_mm512_loadu_ps(s), m[v]));
        _mm512_storeu_ps(s, p);
        sum[v] = _mm512_add_ps(sum[v], p);
      }
    for (int v = 0; v < kV; ++v) l[v] = _mm512_fmadd_ps(l[v], alpha[v], sum[v]);

    // O^T = alpha O^T + V^T P^T.
    int64_t d = 0;
    for (; d + kDB <= Dh; d += kDB)
      pv_block<kDB>(L.St, nk, L.Vp + (d / kDB) * Skv * kDB + k0 * kDB, L.Ot + d * Q, alpha);
    dispatch_remainder<kDB - 1, PvOp>(int(Dh - d), L.St, nk, L.Vp + (d / kDB) * Skv * kDB + k0 * kDB, L.Ot + d * Q,
                                      alpha);
  }

  // out = O / l, transposed back to token-major.
  __m512 inv_l[kV];
  for (int v = 0; v < kV; ++v) inv_l[v] = _mm512_div_ps(_mm512_set1_ps(1.0f), l[v]);
  unpack_transposed(L.Ot, inv_l, nq, Dh, ob + q0 * row, row);
}

}  // namespace quill::cpu::avx512
#endif
