// Driver for quant_linear: activation preparation, panel threading and the scalar reference.
#include "quant/quant_linear.h"
#include "quant/onednn_bf16.h"

#include <algorithm>
#include <array>
#include <atomic>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string_view>

#include "backend/cpu/kernel_table.h"
#include "core/cpu_features.h"
#include "core/log.h"
#include "quant/formats.h"
#include "quant/prepacked_panels.h"
#include "quant/quant_kernels.h"

namespace quill::quant {

using detail::KernelSet;
using detail::PanelKind;
using detail::QuantPlan;
using detail::TileArgs;
using detail::WeightView;

namespace {

constexpr size_t kAlign = 64;
size_t align_up(size_t n) { return (n + kAlign - 1) / kAlign * kAlign; }
// Sub-panels per work item: a few, so one strip of x is reused from L1 across them.
constexpr int64_t kSubPanels = 4;

int64_t group_of(DType dtype) { return dtype == DType::kQ8_0 ? kQ8BlockSize : kTq2BlockSize; }

// Row stride (elements) of prepared activations: padded by a cache line so the micro-kernel's
// rows do not all fall into the same L1 sets when K is a multiple of 4 KiB / element size.
int64_t act_stride(PanelKind kind, int64_t K) {
  if (kind == PanelKind::kI8x3) return 3 * K + 8 * (K / kTq2BlockSize) + 64;  // digits, scales, sums
  return kind == PanelKind::kBf16 || kind == PanelKind::kBf16x3 ? K + 32 : K + 64;
}

size_t act_bytes(PanelKind kind, int64_t rows, int64_t K) {
  switch (kind) {
    case PanelKind::kF32:
      return 0;
    case PanelKind::kBf16:
      return align_up(size_t(rows * act_stride(kind, K)) * 2);
    case PanelKind::kI8:
      return align_up(size_t(rows * act_stride(kind, K))) + align_up(size_t(rows) * sizeof(float));
    case PanelKind::kBf16x3:
      return align_up(size_t(3 * rows * act_stride(kind, K)) * 2);
    case PanelKind::kI8x3:
      return align_up(size_t(rows * act_stride(kind, K)));
  }
  return 0;
}

}  // namespace

// ---- activation preparation (scalar; the reference numerics) ----

void detail::prep_i8_rows(const float* x, int64_t rows, int64_t K, uint8_t* out, float* scale) {
  for (int64_t r = 0; r < rows; ++r) {
    const float* xr = x + r * K;
    float amax = 0.0f;
    bool nan = false;
    for (int64_t k = 0; k < K; ++k) {
      amax = std::max(amax, std::fabs(xr[k]));
      nan |= std::isnan(xr[k]);
    }
    const float s = amax / 127.0f;
    const float inv = s > 0.0f ? 1.0f / s : 0.0f;
    // A row with NaN or Inf has no int8 image: its scale is NaN, so its outputs are NaN.
    scale[r] = nan || std::isinf(amax) ? NAN : s;
    for (int64_t k = 0; k < K; ++k) {
      float q = std::nearbyint(xr[k] * inv);
      q = std::min(127.0f, std::max(-127.0f, q));
      out[r * K + k] = uint8_t(int(q) + 128);
    }
  }
}

void detail::prep_bf16_rows(const float* x, int64_t rows, int64_t K, uint16_t* out) {
  for (int64_t i = 0; i < rows * K; ++i) out[i] = f32_to_bf16(x[i]);
}

void detail::decode_row_chunk_f32(const WeightView& w, int64_t n, int64_t k0, int64_t len, float* out) {
  const auto& tr = dtype_traits(w.dtype);
  const uint8_t* p = w.data + n * w.row_bytes + k0 / tr.block_size * tr.block_bytes;
  switch (w.dtype) {
    case DType::kTQ2_0_G128:
      (void)dequantize_tq2_0_g128(p, 1, len, out);
      break;
    case DType::kQ8_0:
      (void)dequantize_q8_0(p, 1, len, out);
      break;
    case DType::kF8E4M3:
      (void)dequantize_fp8_e4m3_rows(p, w.row_scale + n, 1, len, out);
      break;
    default:
      convert_to_f32(w.dtype, p, out, len);
      break;
  }
}

namespace {
// A tq2 code byte -> its 4 weights as int8, and their sum.
struct Tq2Quads {
  std::array<uint32_t, 256> word;
  std::array<int8_t, 256> sum;
  Tq2Quads() {
    for (int v = 0; v < 256; ++v) {
      uint32_t wd = 0;
      int s = 0;
      for (int j = 0; j < 4; ++j) {
        const int x = tq2_code_value((unsigned(v) >> (2 * j)) & 3u);
        wd |= uint32_t(uint8_t(int8_t(x))) << (8 * j);
        s += x;
      }
      word[size_t(v)] = wd;
      sum[size_t(v)] = int8_t(s);
    }
  }
};
}  // namespace

// int8 quads: panel[k/4][r] = the 4 signed weights k..k+3 of row r; then the group scales d[g][r],
// then the correction c[r] = 128 * sum_g d_g * sum_{k in g} w[k] for u8 = q + 128 activations.
void detail::decode_i8_tq2_panel(const WeightView& w, int64_t n0, int64_t rows, int nr, uint8_t* panel) {
  static const Tq2Quads lut;
  const int64_t K = w.K, ng = K / kTq2BlockSize;
  auto* codes = reinterpret_cast<uint32_t*>(panel);
  float* d = reinterpret_cast<float*>(panel + K * nr);
  float* c = d + ng * nr;
  for (int64_t r = 0; r < nr; ++r) {
    if (r >= rows) {
      for (int64_t q = 0; q < K / 4; ++q) codes[q * nr + r] = 0;
      for (int64_t g = 0; g < ng; ++g) d[g * nr + r] = 0.0f;
      c[r] = 0.0f;
      continue;
    }
    const auto* blk = reinterpret_cast<const BlockTq2*>(w.data + (n0 + r) * w.row_bytes);
    float corr = 0.0f;
    for (int64_t g = 0; g < ng; ++g) {
      int s = 0;
      for (int b = 0; b < 32; ++b) {
        codes[(g * 32 + b) * nr + r] = lut.word[blk[g].qs[b]];
        s += lut.sum[blk[g].qs[b]];
      }
      const float dg = f16_to_f32(blk[g].d);
      d[g * nr + r] = dg;
      corr += dg * float(128 * s);
    }
    c[r] = corr;
  }
}

namespace {

// ---- scalar reference ----

// Decodes row n of W to f32 (exactly) into `w`.
void decode_row_f32(const WeightView& w, int64_t n, float* out) { detail::decode_row_chunk_f32(w, n, 0, w.K, out); }

// Integer weights of row n (tq2: -1/0/+1, q8_0: the int8) and their group scales.
void decode_row_int(const WeightView& w, int64_t n, int8_t* q, float* d) {
  const uint8_t* row = w.data + n * w.row_bytes;
  if (w.dtype == DType::kTQ2_0_G128) {
    const auto* b = reinterpret_cast<const BlockTq2*>(row);
    for (int64_t g = 0; g < w.K / kTq2BlockSize; ++g) {
      d[g] = f16_to_f32(b[g].d);
      for (int j = 0; j < kTq2BlockSize; ++j) q[g * kTq2BlockSize + j] = int8_t(tq2_code_value(tq2_code(b[g].qs, j)));
    }
  } else {
    const auto* b = reinterpret_cast<const BlockQ8_0*>(row);
    for (int64_t g = 0; g < w.K / kQ8BlockSize; ++g) {
      d[g] = f16_to_f32(b[g].d);
      std::memcpy(q + g * kQ8BlockSize, b[g].qs, kQ8BlockSize);
    }
  }
}

size_t reference_scratch_per_thread(int64_t K) { return align_up(size_t(K) * sizeof(float)) * 2; }

void reference_linear(const float* x, int64_t M, const WeightView& w, PanelKind kind, const void* act, int64_t lda,
                      const float* act_scale, const float* bias, float* y, uint8_t* scratch, ThreadPool& pool) {
  const int64_t K = w.K, N = w.N;
  const size_t per_thread = reference_scratch_per_thread(K);
  std::atomic<int64_t> next{0};
  pool.run_on_all([&](int tid) {
    float* wf = reinterpret_cast<float*>(scratch + size_t(tid) * per_thread);
    auto* wq = reinterpret_cast<int8_t*>(wf);
    float* d = reinterpret_cast<float*>(scratch + size_t(tid) * per_thread + per_thread / 2);
    for (int64_t n; (n = next.fetch_add(1)) < N;) {
      const float b = bias ? bias[n] : 0.0f;
      if (kind == PanelKind::kI8) {
        decode_row_int(w, n, wq, d);
        const int64_t G = group_of(w.dtype);
        const auto* xa = static_cast<const uint8_t*>(act);
        for (int64_t m = 0; m < M; ++m) {
          float acc = 0.0f;
          for (int64_t g = 0; g < K / G; ++g) {
            int32_t s = 0;
            for (int64_t k = g * G; k < (g + 1) * G; ++k) s += (int32_t(xa[m * lda + k]) - 128) * wq[k];
            acc += d[g] * float(s);
          }
          y[m * N + n] = act_scale[m] * acc + b;
        }
      } else {
        decode_row_f32(w, n, wf);
        for (int64_t m = 0; m < M; ++m) {
          float acc = 0.0f;
          if (kind == PanelKind::kBf16) {
            const auto* xa = static_cast<const uint16_t*>(act);
            for (int64_t k = 0; k < K; ++k) acc += bf16_to_f32(xa[m * lda + k]) * wf[k];
          } else {
            for (int64_t k = 0; k < K; ++k) acc += x[m * K + k] * wf[k];
          }
          y[m * N + n] = acc + b;
        }
      }
    }
  });
}

// ---- panel driver ----

std::atomic<int64_t> k_block_for_tests{0};
std::atomic<size_t> pass_bytes_for_tests{0};

// `packed`: the weight's panels decoded once (prepacked_panels.h), or null to decode them here.
void panel_linear(const KernelSet& ks, const WeightView& w, const uint8_t* packed, const void* act, int64_t lda,
                  int64_t act_rows, const float* act_scale, int64_t M, const float* bias, float* y, uint8_t* scratch,
                  ThreadPool& pool) {
  const int64_t N = w.N, K = w.K;
  const size_t sub_bytes = align_up(ks.panel_bytes(K, ks.group));
  const int64_t nr = ks.nr;
  const int64_t n_sub = (N + nr - 1) / nr;
  const int64_t n_items_n = (n_sub + kSubPanels - 1) / kSubPanels;
  // Split M too when there are too few column panels to keep every thread busy.
  const int64_t threads = pool.num_threads();
  int64_t m_parts = 1;
  if (n_items_n < 2 * threads && M >= 2 * ks.mr)
    m_parts = std::min<int64_t>((2 * threads + n_items_n - 1) / n_items_n, (M + ks.mr - 1) / ks.mr);
  const int64_t m_step = ((M + m_parts - 1) / m_parts + ks.mr - 1) / ks.mr * ks.mr;
  m_parts = (M + m_step - 1) / m_step;
  const int64_t items = n_items_n * m_parts;
  const int64_t kc_override = k_block_for_tests.load(std::memory_order_relaxed);
  const int64_t kc = kc_override > 0 ? kc_override : ks.kc;
  std::atomic<int64_t> next{0};
  pool.run_on_all([&](int tid) {
    uint8_t* panels = scratch + size_t(tid) * sub_bytes * kSubPanels;
    for (int64_t it; (it = next.fetch_add(1)) < items;) {
      const int64_t pn = it / m_parts, pm = it % m_parts;
      const int64_t s0 = pn * kSubPanels, s1 = std::min(n_sub, s0 + kSubPanels);
      const uint8_t* item_panels = packed ? packed + size_t(s0) * sub_bytes : panels;
      if (!packed)
        for (int64_t s = s0; s < s1; ++s)
          ks.decode(w, s * nr, std::min(nr, N - s * nr), panels + size_t(s - s0) * sub_bytes);
      const int64_t ma = pm * m_step, mb = std::min(M, ma + m_step);
      for (int64_t k0 = 0; k0 < K; k0 += kc) {
        TileArgs a{};
        a.act = act;
        a.lda = lda;
        a.act_rows = act_rows;
        a.act_scale = act_scale;
        a.K = K;
        a.k0 = k0;
        a.kc = std::min(kc, K - k0);
        a.y = y;
        a.ldy = N;
        a.bias = bias;
        a.first = k0 == 0;
        a.last = k0 + kc >= K;
        for (int64_t m0 = ma; m0 < mb; m0 += ks.mr) {
          a.m0 = m0;
          a.mr = std::min<int64_t>(ks.mr, mb - m0);
          for (int64_t s = s0; s < s1; ++s) {
            a.panel = item_panels + size_t(s - s0) * sub_bytes;
            a.n0 = s * nr;
            a.nvalid = std::min(nr, N - s * nr);
            ks.tile(a);
          }
        }
      }
    }
  });
}

Status check_weight(const Tensor& W, const float* w_scale, WeightView* out) {
  if (W.rank() != 2 || !W.is_contiguous())
    return invalid_argument("quant_linear: weight must be a contiguous 2-D tensor, got ", W.describe());
  if (!quant_linear_supports(W.dtype()))
    return unsupported("quant_linear: no kernel for weight dtype ", dtype_name(W.dtype()));
  const int64_t N = W.dim(0), K = W.dim(1);
  const auto& tr = dtype_traits(W.dtype());
  if (K % tr.block_size != 0)
    return invalid_argument("quant_linear: ", tr.name, " weight ", W.shape().to_string(),
                            " has K not a multiple of the block size ", tr.block_size);
  if (W.dtype() == DType::kF8E4M3 && !w_scale)
    return invalid_argument("quant_linear: an f8_e4m3 weight needs its per-row scales");
  *out =
      WeightView{W.dtype(), static_cast<const uint8_t*>(W.data()), N, K, K / tr.block_size * tr.block_bytes, w_scale};
  return Status::ok();
}

}  // namespace

namespace detail {
size_t panel_bytes_generic(PanelKind kind, int nr, int64_t K, int64_t group) {
  switch (kind) {
    case PanelKind::kF32:
      return size_t(K) * size_t(nr) * 4;
    case PanelKind::kBf16:
      return size_t(K) * size_t(nr) * 2;
    case PanelKind::kI8:
      return size_t(K) * size_t(nr) + size_t(K / group) * size_t(nr) * 4 + size_t(nr) * 4;
    case PanelKind::kBf16x3:
      return size_t(K) * size_t(nr) * 2 + size_t(K / group) * size_t(nr) * 4;
    case PanelKind::kI8x3:
      return size_t(K) * size_t(nr) + size_t(K / group) * size_t(nr) * 4;
  }
  return 0;
}

void set_k_block_for_tests(int64_t kc) {
  if (kc < 0 || kc % 128 != 0) {  // a test asking for blocks no set can take would test nothing
    std::fprintf(stderr, "set_k_block_for_tests: %lld is not a multiple of 128\n", static_cast<long long>(kc));
    std::abort();
  }
  k_block_for_tests.store(kc);
}

void set_pass_bytes_for_tests(size_t bytes) { pass_bytes_for_tests.store(bytes); }
}  // namespace detail

const char* quant_mode_name(QuantMode m) { return m == QuantMode::kA8 ? "a8" : "exact"; }

bool quant_linear_supports(DType d) {
  return d == DType::kTQ2_0_G128 || d == DType::kQ8_0 || d == DType::kBF16 || d == DType::kF16 || d == DType::kF8E4M3 ||
         d == DType::kF32;
}

namespace {
const QuantPlan& a8_plan(DType dtype) { return cpu::kernel_table().quant.plan[size_t(dtype)][size_t(QuantMode::kA8)]; }
}  // namespace

bool has_a8_kernel(DType dtype) { return a8_plan(dtype).kernels != nullptr; }

QuantMode quant_mode_for(DType dtype) {
  // Read per call (a getenv next to a GEMM), so a test or tool may switch it between forwards.
  // A8 only where this CPU level has a kernel for it (tq2: AVX2, VNNI or AMX; q8_0 and bf16:
  // AVX-512): the scalar A8 reference is 5-50x slower than the exact kernels, so even an explicit
  // request falls back to exact there, with a note.
  const bool a8_kernel = has_a8_kernel(dtype);
  const char* v = std::getenv("QUILL_TERNARY_MODE");
  if (v && std::string_view(v) == "a8") {
    if (a8_kernel) return QuantMode::kA8;
    if (a8_plan(dtype).kind == PanelKind::kF32) return QuantMode::kExact;  // no A8 numerics for this type (f16, fp8)
    static std::once_flag noted[size_t(DType::kCount)];
    std::call_once(noted[size_t(dtype)], [dtype] {
      log_warn("QUILL_TERNARY_MODE=a8: no A8 kernel for ", dtype_name(dtype), " weights on this CPU (",
               cpu_isa_name(cpu::kernel_table().isa), "); they run exact");
    });
    return QuantMode::kExact;
  }
  if (v && std::string_view(v) == "exact") return QuantMode::kExact;
  if (v && *v) {
    static std::once_flag warned;
    std::call_once(warned,
                   [v] { log_warn("QUILL_TERNARY_MODE='", v, "' is neither 'a8' nor 'exact'; using the defaults"); });
  }
  return dtype == DType::kTQ2_0_G128 && a8_kernel ? QuantMode::kA8 : QuantMode::kExact;
}

namespace {
// Slab packing (quant_kernels.h) moves 4-byte units: an f32 (kF32), a quad of 4 u8 (kI8) or a bf16
// pair (kBf16).
bool uses_slabs(PanelKind kind, const KernelSet* ks) {
  return ks && ks->slab > 0 && (kind == PanelKind::kF32 || kind == PanelKind::kI8 || kind == PanelKind::kBf16);
}
// Whether a call packs slabs: not on oneDNN's route, which reads dense rows.
bool packs_slabs(const QuantPlan& plan) { return uses_slabs(plan.kind, plan.kernels) && !plan.onednn; }
// The buffer of prepared rows a pass needs: none for bf16 rounded straight into slabs (prep_bf16_slabs).
size_t row_buffer_bytes(const QuantPlan& plan, int64_t rows, int64_t K) {
  return packs_slabs(plan) && plan.kind == PanelKind::kBf16 ? 0 : act_bytes(plan.kind, rows, K);
}
int64_t slab_units(PanelKind kind, int64_t K) {
  return kind == PanelKind::kI8 ? K / 4 : kind == PanelKind::kBf16 ? K / 2 : K;
}

// Rows per pass: each pass decodes every weight panel once, so fewer passes save decoding.
// Slab-packed rows (f32, bf16 pairs, u8 quads) take up to their kernel set's pass budget of bytes
// (whole slabs), at least 512 rows (rounded up to whole slabs) whatever K and at most kQuantMChunk
// (the scratch is sized for that many). At 512-row passes the panel decode, bound by reading the weights from memory,
// took 4 % of an AVX-512 bf16 GEMM and 7 % of an f16 one on Zen 4 (docs/PERFORMANCE.md, "Passes by bytes"). int8 rows
// (1 byte an element) always take kQuantMChunk rows, kI8x3 rows (3 bytes) a third of that, and bf16 rows without a
// kernel set (the scalar reference) 512.
int64_t rows_in_budget(const KernelSet* ks, size_t row_bytes, int64_t multiple) {
  const size_t override_bytes = pass_bytes_for_tests.load(std::memory_order_relaxed);
  const size_t budget = override_bytes > 0 ? override_bytes : ks->pass_bytes;
  const int64_t fit = std::min(kQuantMChunk, int64_t(budget / std::max<size_t>(row_bytes, 1))) / multiple * multiple;
  return std::max(fit, (512 + multiple - 1) / multiple * multiple);
}

int64_t rows_per_pass(PanelKind kind, const KernelSet* ks, int64_t K, int64_t M) {
  if (uses_slabs(kind, ks)) return rows_in_budget(ks, size_t(std::max<int64_t>(slab_units(kind, K), 1)) * 4, ks->slab);
  if (kind == PanelKind::kF32) return M;
  // kBf16x3 (AMX exact) keeps 512 rows: three planes, tuned on Sapphire Rapids, not re-measured.
  return kind == PanelKind::kI8 ? kQuantMChunk : kind == PanelKind::kI8x3 ? kQuantMChunk / 3 : 512;
}

size_t slab_bytes(PanelKind kind, const KernelSet* ks, int64_t rows, int64_t K) {
  if (!uses_slabs(kind, ks)) return 0;
  return align_up(size_t((rows + ks->slab - 1) / ks->slab * ks->slab * slab_units(kind, K)) * 4);
}

constexpr int kMaxSlab = 16;  // rows per slab at most (KernelSet::slab)

// Units [0, units) of `live` rows (row i at row[i]) interleaved into one slab at o, its rows past
// `live` zero; returns the end of what was written.
uint8_t* interleave_units(const uint8_t* const* row, int live, int slab, int64_t units, uint8_t* o) {
  for (int64_t u = 0; u < units; ++u, o += slab * 4) {
    for (int i = 0; i < live; ++i) std::memcpy(o + i * 4, row[i] + u * 4, 4);
    std::memset(o + live * 4, 0, size_t(slab - live) * 4);
  }
  return o;
}

// Rows [0, rows) of `units` 4-byte units each (row r at src + r * stride bytes) into slabs of
// `slab` rows, [slab index][unit][row in slab]; the last slab zero-padded. Unit outer, so each
// slab is written in order while its rows are read as `slab` forward streams. Bytes, moved 4 at a
// time by memcpy: the units are floats or u8 quads, never read here as either. (bf16 pairs are
// rounded straight into slabs instead: prep_bf16_slabs.)
void pack_slabs(const uint8_t* src, int64_t rows, int64_t units, int64_t stride, int slab, uint8_t* out,
                ThreadPool& pool) {
  const int64_t slabs = (rows + slab - 1) / slab;
  pool.parallel_for(slabs, 1, [&](int64_t t0, int64_t t1) {
    const uint8_t* row[kMaxSlab];
    for (int64_t t = t0; t < t1; ++t) {
      const int live = int(std::min<int64_t>(slab, rows - t * slab));
      for (int i = 0; i < live; ++i) row[i] = src + (t * slab + i) * stride;
      interleave_units(row, live, slab, units, out + t * units * slab * 4);
    }
  });
}

// Rows [0, rows) of x (K floats each) rounded to bf16 straight into slabs of `slab` rows, units the
// pairs (k, k + 1): a block of k of each of a slab's rows rounded into a buffer that stays in L1, then
// interleaved. The rows are never written out whole and read back (pack_slabs' pass over them).
void prep_bf16_slabs(void (*prep_bf16_rows)(const float*, int64_t, int64_t, uint16_t*), const float* x, int64_t rows,
                     int64_t K, int slab, uint8_t* out, ThreadPool& pool) {
  constexpr int64_t kBlock = 256;  // k per step (even)
  const int64_t units = K / 2, slabs = (rows + slab - 1) / slab;
  pool.parallel_for(slabs, 1, [&](int64_t t0, int64_t t1) {
    alignas(64) uint16_t block[kMaxSlab][kBlock];
    const uint8_t* row[kMaxSlab];
    for (int i = 0; i < kMaxSlab; ++i) row[i] = reinterpret_cast<const uint8_t*>(block[i]);
    for (int64_t t = t0; t < t1; ++t) {
      uint8_t* o = out + t * units * slab * 4;
      const int live = int(std::min<int64_t>(slab, rows - t * slab));
      for (int64_t k0 = 0; k0 < K; k0 += kBlock) {
        const int64_t len = std::min(kBlock, K - k0);
        for (int i = 0; i < live; ++i) prep_bf16_rows(x + (t * slab + i) * K + k0, 1, len, block[i]);
        o = interleave_units(row, live, slab, len / 2, o);
      }
    }
  });
}
}  // namespace

size_t quant_linear_scratch_bytes(int64_t M, const Tensor& W, QuantMode mode, const ThreadPool& pool) {
  if (W.rank() != 2) return 0;
  const int64_t K = W.dim(1);
  const QuantPlan& plan = cpu::kernel_table().quant.plan[size_t(W.dtype())][size_t(mode)];
  const PanelKind kind = plan.kind;
  const KernelSet* ks = plan.kernels;
  const int64_t rows = std::min(std::max<int64_t>(M, 1), rows_per_pass(kind, ks, K, M));
  const size_t threads = size_t(pool.num_threads());
  size_t per_thread = reference_scratch_per_thread(K);
  if (ks) per_thread = std::max(per_thread, align_up(ks->panel_bytes(K, ks->group)) * kSubPanels);
  return row_buffer_bytes(plan, rows, K) + (packs_slabs(plan) ? slab_bytes(kind, ks, rows, K) : 0) +
         threads * per_thread + kAlign;
}

Status quant_linear(const float* x, int64_t M, const Tensor& W, const float* w_scale, const float* bias, float* y,
                    void* scratch, QuantMode mode, ThreadPool& pool) {
  WeightView w{};
  QUILL_RETURN_IF_ERROR(check_weight(W, w_scale, &w));
  if (M <= 0 || w.N == 0) return Status::ok();
  if (!scratch) return invalid_argument("quant_linear: no scratch");
  const int64_t K = w.K;
  const detail::QuantKernels& qk = cpu::kernel_table().quant;
  const QuantPlan& plan = qk.plan[size_t(w.dtype)][size_t(mode)];
  const PanelKind kind = plan.kind;
  if (kind == PanelKind::kBf16 && K % 2 != 0) return invalid_argument("quant_linear: bf16 a8 needs an even K, got ", K);
  const KernelSet* ks = plan.kernels;
  auto* base = reinterpret_cast<uint8_t*>((reinterpret_cast<uintptr_t>(scratch) + kAlign - 1) / kAlign * kAlign);
  const int64_t chunk = std::min(M, rows_per_pass(kind, ks, K, M));
  const bool use_onednn = plan.onednn;
  const bool slabs = packs_slabs(plan);
  const bool bf16_slabs = slabs && kind == PanelKind::kBf16;  // rounded straight into slabs
  uint8_t* act = base;  // activations as prepared, row after row (none for kF32 and bf16 slabs)
  uint8_t* slab = act + row_buffer_bytes(plan, chunk, K);
  uint8_t* work = slab + (slabs ? slab_bytes(kind, ks, chunk, K) : 0);
  // oneDNN's matmul wants dense activation rows (a padded stride sends oneDNN 2.x to a slower
  // non-AMX kernel).
  const int64_t lda = kind == PanelKind::kF32 || use_onednn ? K : act_stride(kind, K);
  // kI8: the per-row scales, after the rows (act_bytes).
  float* act_scale = kind == PanelKind::kI8 ? reinterpret_cast<float*>(act + align_up(size_t(chunk * lda))) : nullptr;
  std::shared_ptr<const uint8_t> packed;
  if (ks && ks->prepack && !use_onednn)
    packed = prepacked_panels(*ks, w, align_up(ks->panel_bytes(K, ks->group)), W.owner(), pool);
  for (int64_t m0 = 0; m0 < M; m0 += chunk) {
    const int64_t rows = std::min(chunk, M - m0);
    const float* xc = x + m0 * K;
    float* yc = y + m0 * w.N;
    if (bf16_slabs) {
      prep_bf16_slabs(qk.prep_bf16_rows, xc, rows, K, ks->slab, slab, pool);
    } else if (kind != PanelKind::kF32) {
      pool.parallel_for(rows, 4, [&](int64_t r0, int64_t r1) {
        for (int64_t r = r0; r < r1; ++r) {
          if (kind == PanelKind::kI8x3)
            qk.prep_i8x3_rows(xc + r * K, 1, K, lda, reinterpret_cast<int8_t*>(act) + r * lda);
          else if (kind == PanelKind::kBf16x3)
            qk.prep_bf16x3_rows(xc + r * K, 1, K, lda, chunk * lda, reinterpret_cast<uint16_t*>(act) + r * lda);
          else if (kind == PanelKind::kI8)
            qk.prep_i8_rows(xc + r * K, 1, K, act + r * lda, act_scale + r);
          else
            qk.prep_bf16_rows(xc + r * K, 1, K, reinterpret_cast<uint16_t*>(act) + r * lda);
        }
      });
    }
    const void* a = kind == PanelKind::kF32 ? static_cast<const void*>(xc) : act;
    if (slabs) {
      const int64_t stride = kind == PanelKind::kF32 ? K * int64_t(sizeof(float)) : lda;  // bytes
      if (!bf16_slabs)
        pack_slabs(static_cast<const uint8_t*>(a), rows, slab_units(kind, K), stride, ks->slab, slab, pool);
      a = slab;
    }
    if (use_onednn) {
      QUILL_RETURN_IF_ERROR(onednn_bf16_matmul(static_cast<const uint16_t*>(a), rows, K, lda,
                                               static_cast<const uint16_t*>(W.data()), W.owner(), w.N, bias, yc));
      continue;
    }
    if (ks)
      panel_linear(*ks, w, packed.get(), a, lda, chunk, act_scale, rows, bias, yc, work, pool);
    else
      reference_linear(xc, rows, w, kind, a, lda, act_scale, bias, yc, work, pool);
  }
  return Status::ok();
}

}  // namespace quill::quant
