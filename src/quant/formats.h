// Block layouts of Quill's quantized weight formats, and scalar reference quantize / dequantize.
// This is the ONLY file that knows the bit layouts; kernels go through the helpers below.
//
//   tq2_0_g128  34 bytes per 128 weights: uint8 qs[32] then f16 d. Weight j sits in byte j/4 at
//               bit shift 2*(j%4), least-significant bits first. Codes 00 -> -1, 01 -> 0,
//               10 -> +1, 11 -> 0 (read as 0, never written). Value = code_value * d.
//   q8_0        34 bytes per 32 weights (ggml): f16 d then int8 qs[32]. Value = q * d.
//   fp8 e4m3    one byte per weight plus one f32 scale per row: value = e4m3(q) * scale.
//
// A weight [N, K] is N rows of K / block blocks, row-major over the output dimension.
#pragma once

#include <cstdint>

#include "quill/status.h"
#include "quill/tensor.h"

namespace quill::quant {

inline constexpr int64_t kTq2BlockSize = 128;
inline constexpr int64_t kTq2BlockBytes = 34;
inline constexpr int64_t kQ8BlockSize = 32;
inline constexpr int64_t kQ8BlockBytes = 34;
inline constexpr float kFp8E4M3Max = 448.0f;

struct BlockTq2 {
  uint8_t qs[32];
  uint16_t d;  // f16 bits
};
struct BlockQ8_0 {
  uint16_t d;  // f16 bits
  int8_t qs[32];
};
static_assert(sizeof(BlockTq2) == kTq2BlockBytes, "tq2_0_g128 block must be 34 bytes");
static_assert(sizeof(BlockQ8_0) == kQ8BlockBytes, "q8_0 block must be 34 bytes");

// tq2_0_g128 codes: 2 bits each, kTq2CodesPerByte to a byte of qs, least-significant bits first.
// constexpr so that the CUDA layout (backend/cuda/tq2_layout.h) is derived from these.
inline constexpr int kTq2CodeBits = 2;
inline constexpr int kTq2CodesPerByte = 8 / kTq2CodeBits;
// Value (-1, 0, +1) of a 2-bit ternary code; code 3 reads as 0.
constexpr int tq2_code_value(unsigned code) { return code == 0 ? -1 : (code == 2 ? 1 : 0); }
// Code of weight j (0..127) of a block.
constexpr unsigned tq2_code(const uint8_t* qs, int j) {
  return (qs[j / kTq2CodesPerByte] >> (kTq2CodeBits * (j % kTq2CodesPerByte))) & ((1u << kTq2CodeBits) - 1);
}
// The 2-bit code written for a ternary value (-1, 0, +1).
constexpr unsigned tq2_code_for(int v) { return v < 0 ? 0u : (v > 0 ? 2u : 1u); }

// Row-wise [rows, K] conversions. K must be a multiple of the block size (else invalid_argument).
Status quantize_tq2_0_g128(const float* w, int64_t rows, int64_t K, void* out);
Status dequantize_tq2_0_g128(const void* in, int64_t rows, int64_t K, float* out);
Status quantize_q8_0(const float* w, int64_t rows, int64_t K, void* out);
Status dequantize_q8_0(const void* in, int64_t rows, int64_t K, float* out);
// fp8 e4m3 with a per-row scale: scale = rowmax|w| / 448 (0 for an all-zero row).
Status quantize_fp8_e4m3_rows(const float* w, int64_t rows, int64_t K, uint8_t* out, float* scales);
Status dequantize_fp8_e4m3_rows(const uint8_t* in, const float* scales, int64_t rows, int64_t K, float* out);

// Tensor helpers: a 2-D f32 [N, K] tensor to `dtype` (tq2_0_g128, q8_0, f16, bf16) and any
// supported 2-D weight back to f32. fp8 needs its scales, so it has no tensor form here.
Result<Tensor> quantize_tensor(const Tensor& w, DType dtype);
Result<Tensor> dequantize_tensor(const Tensor& w);

}  // namespace quill::quant
