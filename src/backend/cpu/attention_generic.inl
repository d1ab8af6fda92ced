// The portable flash-attention tile, written as plain loops over the query lanes so the compiler
// vectorises them for whatever ISA the including file is built for. Included, inside a namespace,
// by attention.cpp (scalar: baseline x86-64 / any CPU).
// Layout and algorithm: see attention.cpp.
#pragma once

#include <limits>

#include "backend/cpu/kernels.h"
#include "backend/cpu/vec_math.h"

namespace quill::cpu::QUILL_ATTENTION_GENERIC_NS {

void attention_tile(const AttentionArgs& a, int64_t item, float* ws) {
  constexpr int64_t Q = kAttnQTile;
  const int64_t Dh = a.Dh, row = a.H * a.Dh;
  const int64_t nqt = attention_query_tiles(a.Sq);
  const int64_t qt = item % nqt, h = (item / nqt) % a.H, b = item / nqt / a.H;
  const int64_t q0 = qt * Q, nq = a.Sq - q0 < Q ? a.Sq - q0 : Q;
  const float* qb = a.q + (b * a.Sq * a.H + h) * Dh;
  const float* kb = a.k + (b * a.Skv * a.H + h) * Dh;
  const float* vb = a.v + (b * a.Skv * a.H + h) * Dh;
  float* ob = a.out + (b * a.Sq * a.H + h) * Dh;

  float* Qt = ws;           // [Dh][Q]
  float* Ot = Qt + Dh * Q;  // [Dh][Q]
  float* St = Ot + Dh * Q;  // [Ktile][Q]
  float m[Q], l[Q], mx[Q], alpha[Q];

  const float qscale = a.scale * vmath::kLog2e;
  for (int64_t d = 0; d < Dh; ++d)
    for (int64_t i = 0; i < Q; ++i) Qt[d * Q + i] = i < nq ? qb[(q0 + i) * row + d] * qscale : 0.0f;
  for (int64_t i = 0; i < Dh * Q; ++i) Ot[i] = 0.0f;
  for (int64_t i = 0; i < Q; ++i) {
    m[i] = -std::numeric_limits<float>::infinity();
    l[i] = 0.0f;
  }

  for (int64_t k0 = 0; k0 < a.Skv; k0 += kAttnKTile) {
    const int64_t nk = a.Skv - k0 < kAttnKTile ? a.Skv - k0 : kAttnKTile;
    // Accumulators in a local array (not St) so they can live in registers.
    for (int64_t j = 0; j < nk; ++j) {
      const float* kr = kb + (k0 + j) * row;
      float acc[Q] = {};
      for (int64_t d = 0; d < Dh; ++d) {
        const float kv = kr[d];
        const float* qd = Qt + d * Q;
        for (int64_t i = 0; i < Q; ++i) acc[i] += kv * qd[i];
      }
      for (int64_t i = 0; i < Q; ++i) St[j * Q + i] = acc[i];
    }
    for (int64_t i = 0; i < Q; ++i) mx[i] = m[i];
    for (int64_t j = 0; j < nk; ++j)
      for (int64_t i = 0; i < Q; ++i) mx[i] = St[j * Q + i] > mx[i] ? St[j * Q + i] : mx[i];
    float sum[Q] = {};
    for (int64_t j = 0; j < nk; ++j)
      for (int64_t i = 0; i < Q; ++i) {
        const float p = vmath::exp2_approx(St[j * Q + i] - mx[i]);
        St[j * Q + i] = p;
        sum[i] += p;
      }
    for (int64_t i = 0; i < Q; ++i) {
      alpha[i] = vmath::exp2_approx(m[i] - mx[i]);
      l[i] = l[i] * alpha[i] + sum[i];
      m[i] = mx[i];
    }
    for (int64_t d = 0; d < Dh; ++d) {
      float acc[Q];
      for (int64_t i = 0; i < Q; ++i) acc[i] = Ot[d * Q + i] * alpha[i];
      for (int64_t j = 0; j < nk; ++j) {
        const float vv = vb[(k0 + j) * row + d];
        const float* p = St + j * Q;
        for (int64_t i = 0; i < Q; ++i) acc[i] += vv * p[i];
      }
      for (int64_t i = 0; i < Q; ++i) Ot[d * Q + i] = acc[i];
    }
  }
  for (int64_t i = 0; i < nq; ++i) {
    const float inv = 1.0f / l[i];
    for (int64_t d = 0; d < Dh; ++d) ob[(q0 + i) * row + d] = Ot[d * Q + i] * inv;
  }
}

}  // namespace quill::cpu::QUILL_ATTENTION_GENERIC_NS
