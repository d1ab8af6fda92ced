// 1- and 2-bit block types that other writers put in GGUF files, read losslessly into Quill's own
// types (docs/FORMATS.md, "Ternary GGUF files from other tools"). Layouts (least-significant bits
// first throughout):
//   ggml Q1_0  (id 41): 128 weights, {f16 d; u8 qs[16]},  bit j -> +d (1) or -d (0)      -> tq2_0_g128
//   ggml Q2_0  (id 42 upstream): 64 weights, {f16 d; u8 qs[16]}, code j -> (code - 1) d  -> q8_0
//   PrismML PQ2_0 (id 142): 128 weights, {f16 d; u8 qs[32]}, code j -> (code - 1) d
//                                              -> tq2_0_g128 if no code is 3 (+2d), else q8_0
// Quill's own tq2_0_g128 (also id 42, the layout oxibonsai writes) is {u8 qs[32]; f16 d} with code 3
// unused. PrismML's PTQ1_0 (id 143) has no primary specification Quill could check and is refused.
#pragma once

#include <cstdint>

#include "quill/status.h"
#include "quill/tensor.h"

namespace quill::quant {

enum class ForeignBlocks : uint8_t { kGgmlQ1_0, kGgmlQ2_0, kPrismPQ2_0 };

struct ForeignBlockInfo {
  const char* name;
  int64_t block_size, block_bytes;
};
ForeignBlockInfo foreign_block_info(ForeignBlocks kind);

// Bytes of `numel` weights in the foreign layout (nullopt: numel is not whole blocks or overflows).
std::optional<int64_t> foreign_bytes(ForeignBlocks kind, int64_t numel);

// The Quill dtype the blocks convert to without loss (scans PQ2_0 codes for a +2).
DType foreign_target(ForeignBlocks kind, const uint8_t* src, int64_t numel);

// Converts a [rows, K] tensor stored in `kind` (K a multiple of its block size) into an owned
// tensor of foreign_target()'s dtype holding exactly the same values.
Result<Tensor> convert_foreign_blocks(ForeignBlocks kind, const uint8_t* src, const Shape& shape);

}  // namespace quill::quant
