// AMX (Sapphire Rapids and later) tile kernel for tq2_0_g128 in A8 mode: u8 activations x int8
// ternary codes with TDPBUSD, 16 rows x 32 columns per call. It reads the same sub-panel as the
// AVX-512 VNNI kernel ([K/4][32][4] codes, then the group scales d and the u8 correction c), so
// the two differ only in who does the int32 dot products: the group sums are exact integers in
// both and are scaled and accumulated in the same order, giving identical results.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#include <immintrin.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <string_view>

#include "core/cpu_features.h"
#include "quant/quant_kernels.h"

namespace quill::quant::detail::amx {

namespace {

constexpr int kNr = 32;
constexpr int kMr = 16;
constexpr int64_t kGroup = 128;  // tq2_0_g128

// Linux: a process must ask for the AMX tile data state before its first tile instruction.
constexpr long kArchReqXcompPerm = 0x1023;
constexpr long kXfeatureXtiledata = 18;

bool os_permits_amx() {
  static const bool ok = syscall(SYS_arch_prctl, kArchReqXcompPerm, kXfeatureXtiledata) == 0;
  return ok;
}

std::atomic<int> g_override{-1};  // -1: QUILL_AMX decides; 0/1: tests

bool env_allows_amx() {
  static const bool allowed = [] {
    const char* v = std::getenv("QUILL_AMX");
    return !(v && (std::string_view(v) == "0" || std::string_view(v) == "off"));
  }();
  return allowed;
}

struct alignas(64) TileConfig {
  uint8_t palette_id;
  uint8_t start_row;
  uint8_t reserved[14];
  uint16_t colsb[16];
  uint8_t rows[16];
};

// tmm0, tmm1: C (rows x 16 int32); tmm2: A (rows x 64 u8); tmm3, tmm4: B (16 k-quads x 64 bytes).
// Loaded on every call: other code on this thread (oneDNN's AMX matmul) may have replaced it.
void configure(int rows) {
  TileConfig c{};
  c.palette_id = 1;
  c.rows[0] = c.rows[1] = c.rows[2] = uint8_t(rows);
  c.colsb[0] = c.colsb[1] = c.colsb[2] = 64;
  c.rows[3] = c.rows[4] = 16;
  c.colsb[3] = c.colsb[4] = 64;
  _tile_loadconfig(&c);
}

inline __mmask16 lane_mask(int64_t valid) {
  return valid <= 0 ? __mmask16(0) : (valid >= 16 ? __mmask16(0xFFFF) : __mmask16((1u << valid) - 1));
}

void tile_tq2(const TileArgs& a) {
  const int rows = int(a.mr);
  configure(rows);
  const auto* x = static_cast<const uint8_t*>(a.act) + a.m0 * a.lda + a.k0;
  const uint8_t* codes = a.panel + (a.k0 / 4) * kNr * 4;
  const float* dp = reinterpret_cast<const float*>(a.panel + a.K * kNr) + (a.k0 / kGroup) * kNr;
  const __mmask16 mk0 = lane_mask(a.nvalid), mk1 = lane_mask(a.nvalid - 16);
  float* y = a.y + a.m0 * a.ldy + a.n0;
  alignas(64) int32_t c0[kMr][16], c1[kMr][16];
  alignas(64) float f[kMr][kNr];
  for (int i = 0; i < rows; ++i) {
    const __m512 z = _mm512_setzero_ps();
    _mm512_store_ps(f[i], a.first ? z : _mm512_maskz_loadu_ps(mk0, y + i * a.ldy));
    _mm512_store_ps(f[i] + 16, a.first ? z : _mm512_maskz_loadu_ps(mk1, y + i * a.ldy + 16));
  }
  for (int64_t g = 0; g < a.kc / kGroup; ++g) {
    _tile_zero(0);
    _tile_zero(1);
    for (int h = 0; h < 2; ++h) {  // two 64-deep steps per 128-group
      const int64_t k = g * kGroup + h * 64;
      _tile_loadd(2, x + k, a.lda);
      const uint8_t* b = codes + (k / 4) * kNr * 4;  // k-quad rows of 128 bytes: columns 0-15, 16-31
      _tile_loadd(3, b, kNr * 4);
      _tile_loadd(4, b + 64, kNr * 4);
      _tile_dpbusd(0, 2, 3);
      _tile_dpbusd(1, 2, 4);
    }
    _tile_stored(0, c0, 64);
    _tile_stored(1, c1, 64);
    const __m512 d0 = _mm512_load_ps(dp + g * kNr), d1 = _mm512_load_ps(dp + g * kNr + 16);
    for (int i = 0; i < rows; ++i) {
      _mm512_store_ps(f[i], _mm512_fmadd_ps(_mm512_cvtepi32_ps(_mm512_load_si512(c0[i])), d0, _mm512_load_ps(f[i])));
      _mm512_store_ps(f[i] + 16,
                      _mm512_fmadd_ps(_mm512_cvtepi32_ps(_mm512_load_si512(c1[i])), d1, _mm512_load_ps(f[i] + 16)));
    }
  }
  if (a.last) {
    const float* corr = reinterpret_cast<const float*>(a.panel + a.K * kNr) + (a.K / kGroup) * kNr;
    const __m512 cc0 = _mm512_load_ps(corr), cc1 = _mm512_load_ps(corr + 16);
    const __m512 b0 = a.bias ? _mm512_maskz_loadu_ps(mk0, a.bias + a.n0) : _mm512_setzero_ps();
    const __m512 b1 = a.bias ? _mm512_maskz_loadu_ps(mk1, a.bias + a.n0 + 16) : _mm512_setzero_ps();
    for (int i = 0; i < rows; ++i) {
      const __m512 s = _mm512_set1_ps(a.act_scale[a.m0 + i]);
      _mm512_store_ps(f[i], _mm512_fmadd_ps(_mm512_sub_ps(_mm512_load_ps(f[i]), cc0), s, b0));
      _mm512_store_ps(f[i] + 16, _mm512_fmadd_ps(_mm512_sub_ps(_mm512_load_ps(f[i] + 16), cc1), s, b1));
    }
  }
  for (int i = 0; i < rows; ++i) {
    _mm512_mask_storeu_ps(y + i * a.ldy, mk0, _mm512_load_ps(f[i]));
    _mm512_mask_storeu_ps(y + i * a.ldy + 16, mk1, _mm512_load_ps(f[i] + 16));
  }
}

}  // namespace

bool available() {
  const int o = g_override.load(std::memory_order_relaxed);
  if (o == 0) return false;
  const CpuFeatures& f = cpu_features();
  if (!(f.amx_tile && f.amx_int8 && f.avx512f && f.avx512bw)) return false;
  if (o != 1 && !env_allows_amx()) return false;
  return os_permits_amx();
}

void set_override(int enabled) { g_override.store(enabled, std::memory_order_relaxed); }

const KernelSet* kernels(DType dtype, PanelKind kind) {
  if (dtype != DType::kTQ2_0_G128 || kind != PanelKind::kI8) return nullptr;
  // Same sub-panel (and decoder) as the AVX-512 VNNI kernel; the k block must be whole groups.
  static const KernelSet set = [] {
    const KernelSet* base = avx512::kernels(DType::kTQ2_0_G128, PanelKind::kI8);
    KernelSet s = *base;
    s.mr = kMr;
    s.tile = tile_tq2;
    return s;
  }();
  static_assert(kNr == 32, "the AMX tile reads the AVX-512 sub-panel of 32 columns");
  return &set;
}

}  // namespace quill::quant::detail::amx
