// Ternary W2A16 GEMM: y[M, N] = x[M, K] . dequant(W)[N, K]^T (+ bias), x bf16, W tq2_0_g128 in the
// GPU layout of tq2_layout.h, accumulation in f32 on the bf16 tensor cores (mma.sync m16n8k16).
//
// Block tile 128 x 128 (M x N), 8 warps as 2 (M) x 4 (N), each warp 64 x 32 = 4 x 4 MMA tiles.
// A (activations) streams through shared memory in 32-wide K slices, 4 stages deep with cp.async.
// B (weights) never touches shared memory: each lane loads the 8 code bytes it needs for a whole
// 128-group of its column with one 8-byte load (prefetched a group ahead) and decodes them in
// registers to exact bf16 {-1, 0, +1}. The MMAs of one group accumulate into `part`; at the end of
// the group the f32 scale of each output column is applied: acc += scale[n, group] * part. So the
// only rounding is that of x to bf16; the scales stay exact f32.
//
// Shared memory rows are padded to 40 halves (80 bytes): the 8 row addresses of an ldmatrix then
// fall in 8 different 16-byte bank groups (80 r mod 128 covers all eight), without a swizzle.
#include "backend/cuda/device_primitives.cuh"
#include "backend/cuda/kernels.h"
#include "backend/cuda/tq2_layout.h"

namespace quill::cuda {

namespace {

constexpr int kBM = 128, kBN = 128, kBK = 32, kStages = 4, kThreads = 256;
constexpr int kLdA = kBK + 8;                      // padded row, in halves
constexpr int kSlicesPerGroup = int(kTq2Group) / kBK;  // 4
static_assert(kStages * kBM * kLdA * 2 <= 48 * 1024, "static shared memory limit");
static_assert(kBK % 16 == 0 && kTq2Group % kBK == 0, "K slices must tile a group");

__global__ __launch_bounds__(kThreads, 1) void ternary_gemm_kernel(const __nv_bfloat16* __restrict__ A,
                                                                    const uint8_t* __restrict__ codes,
                                                                    const __half* __restrict__ scales,
                                                                    const float* __restrict__ bias,
                                                                    float* __restrict__ Y, int M, int N, int K) {
  __shared__ __align__(16) __nv_bfloat16 sA[kStages][kBM * kLdA];

  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const int warp_m = warp >> 2, warp_n = warp & 3;
  const int g = lane >> 2, t = lane & 3;
  const int m0 = blockIdx.y * kBM, n0 = blockIdx.x * kBN;
  const int slices = K / kBK, groups = K / int(kTq2Group);

  // 128 rows x 4 chunks of 16 bytes per slice: two chunks per thread; rows past M read as zeros.
  auto load_a = [&](int stage, int slice) {
#pragma unroll
    for (int i = 0; i < 2; ++i) {
      const int c = tid + i * kThreads, row = c >> 2, chunk = c & 3;
      const int gm = m0 + row;
      const bool ok = gm < M;
      const __nv_bfloat16* src = A + size_t(ok ? gm : 0) * K + slice * kBK + chunk * 8;
      cp_async_16(&sA[stage][row * kLdA + chunk * 8], src, ok);
    }
  };

  // The column this lane feeds as B (n = g of each 8-wide tile) and the two it accumulates (2t, 2t+1).
  auto load_codes = [&](int group, uint2 (&w)[4], float (&sc)[4][2]) {
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      const int nb = n0 + warp_n * 32 + j * 8;
      const int n = nb + g;
      w[j] = n < N ? *reinterpret_cast<const uint2*>(codes + (size_t(group) * N + n) * kTq2GroupCodeBytes + t * 8)
                   : make_uint2(0x55555555u, 0x55555555u);  // code 01 = 0
#pragma unroll
      for (int e = 0; e < 2; ++e) {
        const int c = nb + 2 * t + e;
        sc[j][e] = c < N ? __half2float(scales[size_t(group) * N + c]) : 0.0f;
      }
    }
  };

  float acc[4][4][4], part[4][4][4];
#pragma unroll
  for (int i = 0; i < 4; ++i)
#pragma unroll
    for (int j = 0; j < 4; ++j)
#pragma unroll
      for (int e = 0; e < 4; ++e) acc[i][j][e] = 0.0f;

  uint2 w_cur[4], w_next[4];
  float sc_cur[4][2], sc_next[4][2];
  load_codes(0, w_cur, sc_cur);
#pragma unroll
  for (int j = 0; j < 4; ++j) {  // a defined value for the last group's (unused) prefetch
    w_next[j] = w_cur[j];
    sc_next[j][0] = sc_cur[j][0];
    sc_next[j][1] = sc_cur[j][1];
  }

#pragma unroll
  for (int s = 0; s < kStages - 1; ++s) {
    if (s < slices) load_a(s, s);
    cp_async_commit();
  }

  for (int kt = 0; kt < slices; ++kt) {
    cp_async_wait<kStages - 2>();
    __syncthreads();  // slice kt is in shared memory; every warp is done with slice kt - 1
    if (kt + kStages - 1 < slices) load_a((kt + kStages - 1) % kStages, kt + kStages - 1);
    cp_async_commit();

    const int group = kt / kSlicesPerGroup, sub = kt % kSlicesPerGroup;
    if (sub == 0) {
      if (group + 1 < groups) load_codes(group + 1, w_next, sc_next);
#pragma unroll
      for (int i = 0; i < 4; ++i)
#pragma unroll
        for (int j = 0; j < 4; ++j)
#pragma unroll
          for (int e = 0; e < 4; ++e) part[i][j][e] = 0.0f;
    }

    const __nv_bfloat16* a_stage = sA[kt % kStages];
#pragma unroll
    for (int ks = 0; ks < kBK / 16; ++ks) {
      uint32_t af[4][4];
#pragma unroll
      for (int i = 0; i < 4; ++i)
        ldmatrix_x4(af[i], a_stage + (warp_m * 64 + i * 16 + (lane & 15)) * kLdA + ks * 16 + (lane >> 4) * 8);
      const int step = sub * (kBK / 16) + ks;  // k16 step inside the group, 0..7
      const int shift = 8 * (step & 3);
#pragma unroll
      for (int j = 0; j < 4; ++j) {
        const uint32_t byte = ((step < 4 ? w_cur[j].x : w_cur[j].y) >> shift) & 0xFFu;
        const uint32_t b0 = tq2_pair_to_bf16x2(byte & 0xFu), b1 = tq2_pair_to_bf16x2(byte >> 4);
#pragma unroll
        for (int i = 0; i < 4; ++i) mma_bf16_16816(part[i][j], af[i], b0, b1);
      }
    }

    if (sub == kSlicesPerGroup - 1) {
#pragma unroll
      for (int i = 0; i < 4; ++i)
#pragma unroll
        for (int j = 0; j < 4; ++j) {
          acc[i][j][0] += sc_cur[j][0] * part[i][j][0];
          acc[i][j][1] += sc_cur[j][1] * part[i][j][1];
          acc[i][j][2] += sc_cur[j][0] * part[i][j][2];
          acc[i][j][3] += sc_cur[j][1] * part[i][j][3];
        }
#pragma unroll
      for (int j = 0; j < 4; ++j) {
        w_cur[j] = w_next[j];
        sc_cur[j][0] = sc_next[j][0];
        sc_cur[j][1] = sc_next[j][1];
      }
    }
  }
  cp_async_wait<0>();

#pragma unroll
  for (int i = 0; i < 4; ++i) {
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      const int col = n0 + warp_n * 32 + j * 8 + 2 * t;
#pragma unroll
      for (int half = 0; half < 2; ++half) {
        const int row = m0 + warp_m * 64 + i * 16 + g + half * 8;
        if (row >= M) continue;
#pragma unroll
        for (int e = 0; e < 2; ++e) {
          if (col + e < N) Y[size_t(row) * N + col + e] = acc[i][j][half * 2 + e] + (bias ? bias[col + e] : 0.0f);
        }
      }
    }
  }
}

}  // namespace

cudaError_t ternary_gemm(const uint16_t* x_bf16, const uint8_t* codes, const uint16_t* scales_f16,
                         const float* bias, float* y, int64_t M, int64_t N, int64_t K, cudaStream_t stream) {
  if (M == 0 || N == 0) return cudaSuccess;
  if (M < 0 || N < 0 || K <= 0 || K % kTq2Group != 0 || M > (int64_t(1) << 30) || N > (int64_t(1) << 30) ||
      K > (int64_t(1) << 30) || (N + kBN - 1) / kBN > 65535 * 32 || (M + kBM - 1) / kBM > 65535)
    return cudaErrorInvalidValue;
  const dim3 grid(unsigned((N + kBN - 1) / kBN), unsigned((M + kBM - 1) / kBM));
  ternary_gemm_kernel<<<grid, kThreads, 0, stream>>>(reinterpret_cast<const __nv_bfloat16*>(x_bf16), codes,
                                                    reinterpret_cast<const __half*>(scales_f16), bias, y, int(M),
                                                    int(N), int(K));
  return cudaGetLastError();
}

}  // namespace quill::cuda
