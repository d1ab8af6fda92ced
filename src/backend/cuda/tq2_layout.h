// The GPU layout of ternary tq2_0_g128 weights, built once at upload from the file blocks that
// quant/formats.h describes (codes are read, and the decode below checked, through it).
//
// GPU layout: codes and scales separated, group-major so a warp's loads are contiguous:
//   scales [K/128][N] f16
//   codes  [K/128][N][32] bytes, and inside one (group, n) the 32 bytes are ordered
//          byte[t * 8 + s] (t = 0..3, s = 0..7) = the 4 codes of k = 16 s + {2t, 2t+1, 2t+8, 2t+9}
//          at bits {0-1, 2-3, 4-5, 6-7}.
// That is exactly what lane (g, t) of an mma.m16n8k16 needs for column n = g of the B operand in
// k16 step s (b[0] = k 2t..2t+1, b[1] = k 2t+8..2t+9), so one 8-byte load per (n, group) feeds a
// thread for all 8 k16 steps of a group, and decoding is a few integer ops (tq2_pair_to_bf16x2).
#pragma once

#include <cstdint>

#include "quant/formats.h"

#ifdef __CUDACC__
#define QUILL_HD __host__ __device__ __forceinline__
#else
#define QUILL_HD inline
#endif

namespace quill::cuda {

static_assert(quant::kTq2CodeBits == 2, "the GPU layout packs 2-bit codes, 4 to a byte");

inline constexpr int64_t kTq2Group = quant::kTq2BlockSize;
// One (group, n) record: the group's codes, packed as densely as in the file.
inline constexpr int64_t kTq2GroupCodeBytes = kTq2Group / quant::kTq2CodesPerByte;

// Which k inside a group the code at bit slot `slot` (0..3) of GPU byte (t, s) holds.
QUILL_HD int tq2_gpu_k(int t, int s, int slot) { return 16 * s + 2 * t + (slot & 1) + 8 * (slot >> 1); }

// Two 2-bit codes (bits 0-1 and 2-3 of `two`) -> two bf16 values {-1, 0, +1} packed, the first in
// the low half. A value is non-zero when the code's low bit is 0 (codes 00, 10) and negative when
// its high bit is 0 as well (code 00). bf16 +1 is 0x3F80; the sign is bit 15.
QUILL_HD constexpr uint32_t tq2_pair_to_bf16x2(uint32_t two) {
  const uint32_t e = (two & 3u) | ((two & 0xCu) << 14);  // code 0 at bits 0-1, code 1 at bits 16-17
  const uint32_t nonzero = ~e & 0x00010001u;
  const uint32_t negative = (~e >> 1) & nonzero;
  return nonzero * 0x3F80u | (negative << 15);
}

// The bit trick above against the format's code values, for all 16 pairs of codes.
constexpr bool tq2_pair_decode_matches_format() {
  for (uint32_t two = 0; two < 16; ++two) {
    for (int half = 0; half < 2; ++half) {
      const int v = quant::tq2_code_value((two >> (2 * half)) & 3u);
      const uint32_t want = v == 0 ? 0u : (v > 0 ? 0x3F80u : 0xBF80u);
      if (((tq2_pair_to_bf16x2(two) >> (16 * half)) & 0xFFFFu) != want) return false;
    }
  }
  return true;
}
static_assert(tq2_pair_decode_matches_format(), "tq2_pair_to_bf16x2 disagrees with quant::tq2_code_value");

// Host: file blocks of W [N, K] -> GPU codes and scales (buffers of tq2_codes_bytes / tq2_scales_count).
// K must be a multiple of 128 (the caller checks).
int64_t tq2_codes_bytes(int64_t N, int64_t K);
int64_t tq2_scales_count(int64_t N, int64_t K);
void tq2_repack(const uint8_t* blocks, int64_t N, int64_t K, uint8_t* codes, uint16_t* scales_f16);

}  // namespace quill::cuda
