#include "quant/foreign_blocks.h"

#include <cstring>
#include <limits>

#include "quant/formats.h"

namespace quill::quant {

namespace {

// ggml Q2_0 / PrismML PQ2_0: f16 d first, then 2-bit codes, value (code - 1) * d.
unsigned code2(const uint8_t* qs, int64_t j) { return (qs[j / 4] >> (2 * (j % 4))) & 3u; }

// One q8_0 block of 32 values (code - 1) * d.
void q8_from_codes(uint16_t d, const uint8_t* qs, int64_t first, BlockQ8_0* out) {
  out->d = d;
  for (int64_t j = 0; j < kQ8BlockSize; ++j) out->qs[j] = int8_t(int(code2(qs, first + j)) - 1);
}

}  // namespace

ForeignBlockInfo foreign_block_info(ForeignBlocks kind) {
  switch (kind) {
    case ForeignBlocks::kGgmlQ1_0:
      return {"q1_0 (ggml, binary, group 128)", 128, 18};
    case ForeignBlocks::kGgmlQ2_0:
      return {"q2_0 (ggml, group 64)", 64, 18};
    case ForeignBlocks::kPrismPQ2_0:
      return {"pq2_0 (PrismML, group 128)", 128, 34};
  }
  return {"?", 1, 1};
}

std::optional<int64_t> foreign_bytes(ForeignBlocks kind, int64_t numel) {
  const ForeignBlockInfo b = foreign_block_info(kind);
  if (numel < 0 || numel % b.block_size) return std::nullopt;
  const int64_t blocks = numel / b.block_size;
  if (blocks > std::numeric_limits<int64_t>::max() / b.block_bytes) return std::nullopt;
  return blocks * b.block_bytes;
}

DType foreign_target(ForeignBlocks kind, const uint8_t* src, int64_t numel) {
  switch (kind) {
    case ForeignBlocks::kGgmlQ1_0:
      return DType::kTQ2_0_G128;
    case ForeignBlocks::kGgmlQ2_0:
      return DType::kQ8_0;  // two 64-blocks with their own scales cannot share a 128-block scale
    case ForeignBlocks::kPrismPQ2_0:
      for (int64_t b = 0; b < numel / 128; ++b)
        for (int64_t i = 0; i < 32; ++i)
          for (int s = 0; s < 4; ++s)
            if (((src[b * 34 + 2 + i] >> (2 * s)) & 3u) == 3u) return DType::kQ8_0;  // a +2d weight
      return DType::kTQ2_0_G128;
  }
  return DType::kQ8_0;
}

Result<Tensor> convert_foreign_blocks(ForeignBlocks kind, const uint8_t* src, const Shape& shape) {
  const ForeignBlockInfo info = foreign_block_info(kind);
  if (shape.rank() < 1 || shape[shape.rank() - 1] % info.block_size)
    return invalid_argument(info.name, " rows must be whole blocks of ", info.block_size, ", got ", shape.to_string());
  const int64_t numel = shape.numel();
  const DType to = foreign_target(kind, src, numel);
  Tensor out = Tensor::empty(to, shape);
  const int64_t blocks = numel / info.block_size;
  for (int64_t b = 0; b < blocks; ++b) {
    const uint8_t* in = src + b * info.block_bytes;
    uint16_t d;
    std::memcpy(&d, in, 2);
    const uint8_t* qs = in + 2;
    if (kind == ForeignBlocks::kGgmlQ1_0) {
      BlockTq2& o = out.data_as<BlockTq2>()[b];
      std::memset(o.qs, 0, sizeof o.qs);
      for (int j = 0; j < kTq2BlockSize; ++j) {
        const unsigned bit = (qs[j / 8] >> (j % 8)) & 1u;
        o.qs[j / kTq2CodesPerByte] |= uint8_t(tq2_code_for(bit ? 1 : -1) << (kTq2CodeBits * (j % kTq2CodesPerByte)));
      }
      o.d = d;
    } else if (to == DType::kTQ2_0_G128) {  // PQ2_0 without +2: the same codes, scale moved to the end
      BlockTq2& o = out.data_as<BlockTq2>()[b];
      std::memcpy(o.qs, qs, sizeof o.qs);
      o.d = d;
    } else {  // q8_0: 64 (Q2_0) or 128 (PQ2_0) weights -> 2 or 4 blocks of 32 with the same scale
      BlockQ8_0* o = out.data_as<BlockQ8_0>() + b * (info.block_size / kQ8BlockSize);
      for (int64_t k = 0; k < info.block_size / kQ8BlockSize; ++k) q8_from_codes(d, qs, k * kQ8BlockSize, o + k);
    }
  }
  return out;
}

}  // namespace quill::quant
