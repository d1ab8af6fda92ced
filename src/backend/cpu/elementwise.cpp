// Element-wise ops the models need besides the activations: ReLU, row-broadcast add (position
// embeddings, residual sums), SwiGLU and rotary embeddings. Plain loops the compiler vectorises
// (SwiGLU's SiLU is the activation kernel's); the arithmetic is written in the order the reference
// modules use.
#include <algorithm>
#include <cmath>

#include "backend/cpu/kernel_table.h"
#include "backend/cpu/ops.h"

namespace quill::cpu {

namespace {
constexpr int64_t kChunk = 1 << 14;
}

void relu(float* x, int64_t n, ThreadPool& pool) {
  pool.parallel_for(n, kChunk, [&](int64_t a, int64_t b) {
    for (int64_t i = a; i < b; ++i) x[i] = x[i] > 0.0f ? x[i] : 0.0f;
  });
}

void add_rows(float* x, const float* y, int64_t rows, int64_t D, int64_t y_rows, ThreadPool& pool) {
  if (y_rows == rows) {  // a plain sum: split by elements, not rows (a VAE map may be 4 rows of 1M)
    pool.parallel_for(rows * D, kChunk, [&](int64_t a, int64_t b) {
      for (int64_t i = a; i < b; ++i) x[i] = y[i] + x[i];
    });
    return;
  }
  pool.parallel_for(rows, std::max<int64_t>(1, kChunk / std::max<int64_t>(1, D)), [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      float* xr = x + r * D;
      const float* yr = y + (r % y_rows) * D;
      for (int64_t d = 0; d < D; ++d) xr[d] = yr[d] + xr[d];
    }
  });
}

// SiLU of the gate row through the table's SiLU (the same vectorised kernel as the silu op, which
// FLUX.2's MLPs spend a few percent of a step in with a scalar exp), then times the up row.
void swiglu(const float* gate, const float* up, int64_t ld, float* out, int64_t M, int64_t F, ThreadPool& pool) {
  const auto silu = kernel_table().silu;
  pool.parallel_for(M, 1, [&](int64_t m0, int64_t m1) {
    for (int64_t m = m0; m < m1; ++m) {
      float* o = out + m * F;
      std::copy(gate + m * ld, gate + m * ld + F, o);
      silu(o, F);
      const float* u = up + m * ld;
      for (int64_t j = 0; j < F; ++j) o[j] *= u[j];
    }
  });
}

void rope(float* x, int64_t B, int64_t S, int64_t H, int64_t Dh, const float* cos, const float* sin, int64_t pairs,
          ThreadPool& pool) {
  pool.parallel_for(B * S, 16, [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      const int64_t s = r % S;
      const float* cs = cos + s * pairs;
      const float* sn = sin + s * pairs;
      for (int64_t h = 0; h < H; ++h) {
        float* v = x + (r * H + h) * Dh;
        for (int64_t i = 0; i < pairs; ++i) {
          const float a = v[2 * i], b = v[2 * i + 1];
          v[2 * i] = a * cs[i] - b * sn[i];
          v[2 * i + 1] = a * sn[i] + b * cs[i];
        }
      }
    }
  });
}

void rope_half(float* x, int64_t B, int64_t S, int64_t H, int64_t Dh, const float* cos, const float* sin,
               ThreadPool& pool) {
  const int64_t half = Dh / 2;
  pool.parallel_for(B * S, 16, [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      const float* cs = cos + (r % S) * half;
      const float* sn = sin + (r % S) * half;
      for (int64_t h = 0; h < H; ++h) {
        float* v = x + (r * H + h) * Dh;
        for (int64_t i = 0; i < half; ++i) {
          const float a = v[i], b = v[i + half];
          v[i] = a * cs[i] - b * sn[i];
          v[i + half] = b * cs[i] + a * sn[i];
        }
      }
    }
  });
}

}  // namespace quill::cpu
