// Non-causal multi-head attention, flash style (online softmax, O(sequence) memory), on the bf16
// tensor cores with f32 accumulation; plus a plain f32 kernel for other head dims.
//
// flash_attention_kernel<D>: a block of 4 warps owns 64 queries of one (batch, head); each warp
// owns 16 query rows and keeps their Q fragments, the running max / sum and the output
// accumulators in registers. Key/value tiles of 64 rows stream through shared memory, double
// buffered with cp.async (tile j + 1 loads while tile j computes):
//   S = Q K^T           K tile via ldmatrix (K rows are the B operand's columns)
//   P = exp2(S * scale * log2 e - m), with m the running row max (masked keys -> -inf -> 0)
//   O = O * alpha + P V  P converted in registers from the C layout to the A layout; V via
//                        ldmatrix.trans
// Rows are padded to D + 8 halves so the 8 rows of one ldmatrix hit 8 different bank groups.
#include <cmath>

#include "backend/cuda/device_primitives.cuh"
#include "backend/cuda/kernels.h"

namespace quill::cuda {

namespace {

constexpr int kBQ = 64, kBKV = 64, kWarps = 4, kThreads = kWarps * 32;

template <int D>
constexpr int smem_bytes() {
  return (kBQ + 4 * kBKV) * (D + 8) * 2;  // Q + 2 x (K, V)
}

template <int D>
__global__ __launch_bounds__(kThreads) void flash_attention_kernel(const __nv_bfloat16* __restrict__ Q,
                                                                   const __nv_bfloat16* __restrict__ K,
                                                                   const __nv_bfloat16* __restrict__ V,
                                                                   float* __restrict__ O, int Sq, int Skv, int H,
                                                                   float scale_log2) {
  static_assert(D % 16 == 0 && D <= 128, "head dim");
  constexpr int kLd = D + 8;
  constexpr int kChunks = D / 8;  // 16-byte chunks per row
  extern __shared__ __align__(16) unsigned char smem_raw[];
  __nv_bfloat16* sQ = reinterpret_cast<__nv_bfloat16*>(smem_raw);
  __nv_bfloat16* sK = sQ + kBQ * kLd;   // [2][kBKV * kLd]
  __nv_bfloat16* sV = sK + 2 * kBKV * kLd;

  const int b = blockIdx.z, h = blockIdx.y, q0 = blockIdx.x * kBQ;
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const int g = lane >> 2, t = lane & 3;
  const size_t row_stride = size_t(H) * D;
  const __nv_bfloat16* Qbh = Q + (size_t(b) * Sq * H + h) * D;
  const __nv_bfloat16* Kbh = K + (size_t(b) * Skv * H + h) * D;
  const __nv_bfloat16* Vbh = V + (size_t(b) * Skv * H + h) * D;

  // 64 rows of one (batch, head) starting at row0; rows past `rows` read as zeros.
  auto load_tile = [&](__nv_bfloat16* dst, const __nv_bfloat16* src, int row0, int rows) {
    for (int c = tid; c < 64 * kChunks; c += kThreads) {
      const int r = c / kChunks, chunk = c % kChunks;
      const int gr = row0 + r;
      const bool ok = gr < rows;
      cp_async_16(dst + r * kLd + chunk * 8, src + size_t(ok ? gr : 0) * row_stride + chunk * 8, ok);
    }
  };

  load_tile(sQ, Qbh, q0, Sq);
  load_tile(sK, Kbh, 0, Skv);
  load_tile(sV, Vbh, 0, Skv);
  cp_async_commit();

  uint32_t qf[D / 16][4];
  float o[D / 8][4];
#pragma unroll
  for (int d = 0; d < D / 8; ++d) o[d][0] = o[d][1] = o[d][2] = o[d][3] = 0.0f;
  float row_max[2] = {-INFINITY, -INFINITY}, row_sum[2] = {0.0f, 0.0f};

  const int tiles = (Skv + kBKV - 1) / kBKV;
  for (int j = 0; j < tiles; ++j) {
    cp_async_wait<0>();
    __syncthreads();  // tile j is in; every warp is done with tile j - 1, whose buffer we refill now
    if (j == 0) {
#pragma unroll
      for (int kk = 0; kk < D / 16; ++kk)
        ldmatrix_x4(qf[kk], sQ + (warp * 16 + (lane & 15)) * kLd + kk * 16 + (lane >> 4) * 8);
    }
    if (j + 1 < tiles) {
      load_tile(sK + ((j + 1) & 1) * kBKV * kLd, Kbh, (j + 1) * kBKV, Skv);
      load_tile(sV + ((j + 1) & 1) * kBKV * kLd, Vbh, (j + 1) * kBKV, Skv);
    }
    cp_async_commit();
    const __nv_bfloat16* k_tile = sK + (j & 1) * kBKV * kLd;
    const __nv_bfloat16* v_tile = sV + (j & 1) * kBKV * kLd;

    // S = Q K^T for this warp's 16 rows x 64 keys: 8 n-tiles.
    float s[8][4];
#pragma unroll
    for (int n = 0; n < 8; ++n) s[n][0] = s[n][1] = s[n][2] = s[n][3] = 0.0f;
#pragma unroll
    for (int kk = 0; kk < D / 16; ++kk) {
#pragma unroll
      for (int p = 0; p < 4; ++p) {
        uint32_t r[4];
        ldmatrix_x4(r, k_tile + (p * 16 + (lane & 7) + ((lane >> 4) << 3)) * kLd + kk * 16 + ((lane >> 3) & 1) * 8);
        mma_bf16_16816(s[2 * p], qf[kk], r[0], r[1]);
        mma_bf16_16816(s[2 * p + 1], qf[kk], r[2], r[3]);
      }
    }

    // Online softmax; this lane holds rows g (e = 0, 1) and g + 8 (e = 2, 3), shared with its quad.
    float tile_max[2] = {row_max[0], row_max[1]};
#pragma unroll
    for (int n = 0; n < 8; ++n) {
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const int key = j * kBKV + n * 8 + 2 * t + (e & 1);
        s[n][e] = key < Skv ? s[n][e] * scale_log2 : -INFINITY;
        tile_max[e >> 1] = fmaxf(tile_max[e >> 1], s[n][e]);
      }
    }
    float alpha[2];
#pragma unroll
    for (int r = 0; r < 2; ++r) {
      tile_max[r] = fmaxf(tile_max[r], __shfl_xor_sync(0xffffffffu, tile_max[r], 1));
      tile_max[r] = fmaxf(tile_max[r], __shfl_xor_sync(0xffffffffu, tile_max[r], 2));
      // Every tile holds at least one real key, so tile_max is finite; the first tile's alpha is 0.
      alpha[r] = exp2f(row_max[r] - tile_max[r]);
      row_max[r] = tile_max[r];
    }
    float tile_sum[2] = {0.0f, 0.0f};
#pragma unroll
    for (int n = 0; n < 8; ++n) {
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        s[n][e] = exp2f(s[n][e] - row_max[e >> 1]);
        tile_sum[e >> 1] += s[n][e];
      }
    }
#pragma unroll
    for (int r = 0; r < 2; ++r) row_sum[r] = row_sum[r] * alpha[r] + tile_sum[r];
#pragma unroll
    for (int d = 0; d < D / 8; ++d) {
      o[d][0] *= alpha[0];
      o[d][1] *= alpha[0];
      o[d][2] *= alpha[1];
      o[d][3] *= alpha[1];
    }

    // O += P V: P's C fragments of n-tiles 2kk, 2kk+1 are the A fragment of key step kk.
#pragma unroll
    for (int kk = 0; kk < kBKV / 16; ++kk) {
      const uint32_t pa[4] = {pack_bf16x2(s[2 * kk][0], s[2 * kk][1]), pack_bf16x2(s[2 * kk][2], s[2 * kk][3]),
                              pack_bf16x2(s[2 * kk + 1][0], s[2 * kk + 1][1]),
                              pack_bf16x2(s[2 * kk + 1][2], s[2 * kk + 1][3])};
#pragma unroll
      for (int p = 0; p < D / 16; ++p) {
        uint32_t r[4];
        ldmatrix_x4_trans(r, v_tile + (kk * 16 + (lane & 7) + ((lane >> 3) & 1) * 8) * kLd + p * 16 + (lane >> 4) * 8);
        mma_bf16_16816(o[2 * p], pa, r[0], r[1]);
        mma_bf16_16816(o[2 * p + 1], pa, r[2], r[3]);
      }
    }
  }
  cp_async_wait<0>();

#pragma unroll
  for (int r = 0; r < 2; ++r) {
    row_sum[r] += __shfl_xor_sync(0xffffffffu, row_sum[r], 1);
    row_sum[r] += __shfl_xor_sync(0xffffffffu, row_sum[r], 2);
  }
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    const int q = q0 + warp * 16 + g + r * 8;
    if (q >= Sq) continue;
    const float inv = row_sum[r] > 0.0f ? 1.0f / row_sum[r] : 0.0f;
    float* out = O + ((size_t(b) * Sq + q) * H + h) * D;
#pragma unroll
    for (int d = 0; d < D / 8; ++d)
      *reinterpret_cast<float2*>(out + d * 8 + 2 * t) = make_float2(o[d][2 * r] * inv, o[d][2 * r + 1] * inv);
  }
}

template <int D>
cudaError_t launch_flash(const uint16_t* q, const uint16_t* k, const uint16_t* v, float* out, int64_t B, int64_t Sq,
                         int64_t Skv, int64_t H, float scale, cudaStream_t stream) {
  constexpr int bytes = smem_bytes<D>();
  cudaError_t e = cudaFuncSetAttribute(flash_attention_kernel<D>, cudaFuncAttributeMaxDynamicSharedMemorySize, bytes);
  if (e != cudaSuccess) return e;
  const dim3 grid(unsigned((Sq + kBQ - 1) / kBQ), unsigned(H), unsigned(B));
  flash_attention_kernel<D><<<grid, kThreads, bytes, stream>>>(
      reinterpret_cast<const __nv_bfloat16*>(q), reinterpret_cast<const __nv_bfloat16*>(k),
      reinterpret_cast<const __nv_bfloat16*>(v), out, int(Sq), int(Skv), int(H), scale * 1.4426950408889634f);
  return cudaGetLastError();
}

// One warp per (batch, query, head) row; lane l holds dims l, l + 32, ... (up to 8 per lane).
__global__ void attention_f32_kernel(const float* __restrict__ Q, const float* __restrict__ K,
                                     const float* __restrict__ V, float* __restrict__ O, int64_t rows, int64_t Sq,
                                     int64_t Skv, int64_t H, int D, float scale) {
  constexpr int kPerLane = int(kAttentionF32MaxHeadDim / 32);
  const int64_t row = (blockIdx.x * int64_t(blockDim.x) + threadIdx.x) / 32;  // = (b * Sq + q) * H + h
  const int lane = threadIdx.x & 31;
  if (row >= rows) return;
  const int64_t h = row % H, b = row / (H * Sq);
  float qr[kPerLane], acc[kPerLane];
#pragma unroll
  for (int i = 0; i < kPerLane; ++i) {
    const int d = lane + 32 * i;
    qr[i] = d < D ? Q[row * D + d] : 0.0f;
    acc[i] = 0.0f;
  }
  float m = -INFINITY, l = 0.0f;
  for (int64_t kv = 0; kv < Skv; ++kv) {
    const size_t base = (size_t(b * Skv + kv) * H + h) * D;
    float dot = 0.0f;
#pragma unroll
    for (int i = 0; i < kPerLane; ++i) {
      const int d = lane + 32 * i;
      if (d < D) dot += qr[i] * K[base + d];
    }
    const float sv = warp_sum(dot) * scale;
    const float m_new = fmaxf(m, sv);
    const float alpha = expf(m - m_new), p = expf(sv - m_new);
    l = l * alpha + p;
#pragma unroll
    for (int i = 0; i < kPerLane; ++i) {
      const int d = lane + 32 * i;
      acc[i] = acc[i] * alpha + (d < D ? p * V[base + d] : 0.0f);
    }
    m = m_new;
  }
  const float inv = l > 0.0f ? 1.0f / l : 0.0f;
#pragma unroll
  for (int i = 0; i < kPerLane; ++i) {
    const int d = lane + 32 * i;
    if (d < D) O[row * D + d] = acc[i] * inv;
  }
}

bool dims_ok(int64_t B, int64_t Sq, int64_t Skv, int64_t H) {
  return B > 0 && Sq > 0 && Skv > 0 && H > 0 && B <= 65535 && H <= 65535 && Sq < (int64_t(1) << 30) &&
         Skv < (int64_t(1) << 30);
}

}  // namespace

bool flash_attention_supports(int64_t Dh) { return Dh == 64 || Dh == 128; }

cudaError_t flash_attention_bf16(const uint16_t* q, const uint16_t* k, const uint16_t* v, float* out, int64_t B,
                                 int64_t Sq, int64_t Skv, int64_t H, int64_t Dh, float scale, cudaStream_t stream) {
  if (!dims_ok(B, Sq, Skv, H)) return cudaErrorInvalidValue;
  if (Dh == 64) return launch_flash<64>(q, k, v, out, B, Sq, Skv, H, scale, stream);
  if (Dh == 128) return launch_flash<128>(q, k, v, out, B, Sq, Skv, H, scale, stream);
  return cudaErrorInvalidValue;
}

cudaError_t attention_f32(const float* q, const float* k, const float* v, float* out, int64_t B, int64_t Sq,
                          int64_t Skv, int64_t H, int64_t Dh, float scale, cudaStream_t stream) {
  if (!dims_ok(B, Sq, Skv, H) || Dh <= 0 || Dh > kAttentionF32MaxHeadDim) return cudaErrorInvalidValue;
  const int64_t rows = B * Sq * H;
  constexpr int kBlock = 256;
  const int64_t blocks = (rows * 32 + kBlock - 1) / kBlock;
  if (blocks > int64_t(1) << 31) return cudaErrorInvalidValue;
  attention_f32_kernel<<<unsigned(blocks), kBlock, 0, stream>>>(q, k, v, out, rows, Sq, Skv, H, int(Dh), scale);
  return cudaGetLastError();
}

}  // namespace quill::cuda
