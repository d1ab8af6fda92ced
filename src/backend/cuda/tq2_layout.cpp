#include "backend/cuda/tq2_layout.h"

#include <cstddef>
#include <cstring>

namespace quill::cuda {

int64_t tq2_codes_bytes(int64_t N, int64_t K) { return (K / kTq2Group) * N * kTq2GroupCodeBytes; }
int64_t tq2_scales_count(int64_t N, int64_t K) { return (K / kTq2Group) * N; }

void tq2_repack(const uint8_t* blocks, int64_t N, int64_t K, uint8_t* codes, uint16_t* scales_f16) {
  const int64_t groups = K / kTq2Group;
  for (int64_t n = 0; n < N; ++n) {
    for (int64_t g = 0; g < groups; ++g) {
      const uint8_t* block = blocks + (n * groups + g) * quant::kTq2BlockBytes;
      const uint8_t* qs = block + offsetof(quant::BlockTq2, qs);
      uint16_t d;
      std::memcpy(&d, block + offsetof(quant::BlockTq2, d), sizeof d);  // f16 bits, as stored
      scales_f16[g * N + n] = d;
      uint8_t* out = codes + (g * N + n) * kTq2GroupCodeBytes;
      for (int t = 0; t < 4; ++t) {
        for (int s = 0; s < 8; ++s) {
          uint32_t byte = 0;
          for (int slot = 0; slot < 4; ++slot)
            byte |= quant::tq2_code(qs, tq2_gpu_k(t, s, slot)) << (quant::kTq2CodeBits * slot);
          out[t * 8 + s] = uint8_t(byte);
        }
      }
    }
  }
}

}  // namespace quill::cuda
