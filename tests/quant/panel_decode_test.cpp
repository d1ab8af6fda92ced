// The exact kernels' weight panels: every SIMD level decodes each weight type to the very bits the
// scalar decoder gives, hostile scales (negative, -0, subnormal, inf, NaN) and unused codes included.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include "../backend/op_test_util.h"
#include "backend/cpu/kernel_table.h"
#include "quant/formats.h"
#include "quant/quant_kernels.h"
#include "quant/quant_linear.h"

namespace quill::quant {
namespace {

using detail::KernelSet;
using detail::PanelKind;
using detail::WeightView;
using testing_ops::testable_isas;

// f16 bit patterns a hostile file may hold as a block scale.
constexpr uint16_t kScales[] = {0x3C00, 0xBC00, 0x0000, 0x8000, 0x0001, 0x7C00, 0xFC00, 0x7E00, 0x2E66, 0xC123};

std::vector<uint8_t> random_rows(DType dt, int64_t N, int64_t K, uint32_t seed) {
  const auto& tr = dtype_traits(dt);
  const int64_t row_bytes = K / tr.block_size * tr.block_bytes;
  std::vector<uint8_t> data(size_t(N * row_bytes));
  std::mt19937 rng(seed);
  for (auto& b : data) b = uint8_t(rng());
  // Put the hostile scales where each format keeps them (every code and element stays random).
  auto set_scales = [&](auto* blocks) {
    for (size_t b = 0; b < data.size() / sizeof(*blocks); ++b) blocks[b].d = kScales[b % std::size(kScales)];
  };
  if (dt == DType::kTQ2_0_G128) set_scales(reinterpret_cast<BlockTq2*>(data.data()));
  if (dt == DType::kQ8_0) set_scales(reinterpret_cast<BlockQ8_0*>(data.data()));
  return data;
}

bool same_bits(float a, float b) {
  if (std::isnan(a) && std::isnan(b)) return true;  // NaN payloads are not a promise
  return std::memcmp(&a, &b, sizeof(a)) == 0;
}

TEST(ExactPanels, DecodeToTheScalarDecodersBits) {
  // K: several 128-wide decode chunks and a tail (f16 / bf16); 17 rows: a full and a partial sub-panel.
  for (DType dt : {DType::kTQ2_0_G128, DType::kQ8_0, DType::kF16, DType::kBF16}) {
    const int64_t K = dtype_traits(dt).block_size > 1 ? 384 : 389, N = 17;
    const std::vector<uint8_t> data = random_rows(dt, N, K, uint32_t(int(dt) + 5));
    const auto& tr = dtype_traits(dt);
    const WeightView w{dt, data.data(), N, K, K / tr.block_size * tr.block_bytes, nullptr};
    std::vector<float> ref(static_cast<size_t>(K));
    for (CpuIsa isa : testable_isas()) {
      const KernelSet* ks = cpu::kernel_table_for(isa).quant.plan[size_t(dt)][size_t(QuantMode::kExact)].kernels;
      if (!ks || ks->kind != PanelKind::kF32) continue;  // the scalar level has no panels
      // Panels are 64-byte aligned in quant_linear's scratch; the kernels rely on it.
      std::vector<float> buf(ks->panel_bytes(K, ks->group) / sizeof(float) + 64);
      float* panel = reinterpret_cast<float*>((reinterpret_cast<uintptr_t>(buf.data()) + 63) / 64 * 64);
      for (int64_t n0 = 0; n0 < N; n0 += ks->nr) {
        const int64_t rows = std::min<int64_t>(ks->nr, N - n0);
        ks->decode(w, n0, rows, reinterpret_cast<uint8_t*>(panel));
        for (int64_t r = 0; r < rows; ++r) {
          detail::decode_row_chunk_f32(w, n0 + r, 0, K, ref.data());
          int bad = 0;
          for (int64_t k = 0; k < K && bad < 3; ++k) {
            const float got = panel[k * ks->nr + r];
            if (!same_bits(got, ref[size_t(k)])) {
              ++bad;
              ADD_FAILURE() << dtype_name(dt) << " " << cpu_isa_name(isa) << ": weight (" << n0 + r << ", " << k
                            << ") decodes to " << got << ", the scalar decoder gives " << ref[size_t(k)];
            }
          }
        }
      }
    }
  }
}

}  // namespace
}  // namespace quill::quant
