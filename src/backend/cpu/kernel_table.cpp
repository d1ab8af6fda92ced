#include "backend/cpu/kernel_table.h"

#include <atomic>
#include <cstdlib>
#include <mutex>
#include <string_view>

#include "backend/cpu/gelu_erf.h"
#include "quant/onednn_bf16.h"
#include "quant/quant_linear.h"

namespace quill::cpu {

namespace {

namespace qd = quant::detail;
using qd::PanelKind;
using quant::QuantMode;

// What one ISA namespace provides; the linear kernels are looked up per dtype.
struct IsaKernels {
  LinearKernels (*linear)(DType dtype);
  UnaryFn gelu_tanh, silu, gelu_erf;
  AttentionPackFn attention_pack;
  AttentionTileFn attention_tile;
};

IsaKernels isa_kernels(CpuIsa isa) {
#if defined(__x86_64__)
  if (isa == CpuIsa::kAvx512)
    return {avx512::linear_kernels, avx512::gelu_tanh,           avx512::silu,
            avx512::gelu_erf,       avx512::attention_pack_head, avx512::attention_tile};
  if (isa == CpuIsa::kAvx2)
    return {avx2::linear_kernels,      avx2::gelu_tanh, avx2::silu, avx2::gelu_erf, avx2::attention_pack_head,
            avx2::attention_tile};
#endif
  return {scalar::linear_kernels, scalar::gelu_tanh, scalar::silu, scalar::gelu_erf, nullptr, scalar::attention_tile};
}

// bf16 activations through oneDNN's matmul: where AMX runs it, or as QUILL_BF16_ONEDNN says (1: also
// without AMX, for its faster GEMM at the cost of a second copy of the weights; 0: never).
bool bf16_via_onednn(bool amx) {
  const char* v = std::getenv("QUILL_BF16_ONEDNN");
  if (v && *v) return std::string_view(v) != "0";
  return amx;
}

// quant_linear's activations and kernels for (dtype, mode); see quant_linear.h for the modes.
qd::QuantPlan quant_plan(CpuIsa isa, bool amx, DType dtype, QuantMode mode) {
  qd::QuantPlan p;
  if (mode == QuantMode::kA8) {
    if (dtype == DType::kTQ2_0_G128 || dtype == DType::kQ8_0) p.kind = PanelKind::kI8;
    if (dtype == DType::kBF16) p.kind = PanelKind::kBf16;
  }
#if defined(__x86_64__)
  if (isa == CpuIsa::kAvx512) {
    if (amx && mode == QuantMode::kExact && dtype == DType::kTQ2_0_G128 && qd::amx::supported_exact()) {
      p.kind = PanelKind::kBf16x3;
      p.kernels = qd::amx::exact_kernels(dtype);
      return p;
    }
    // Without AMX, exact ternary runs as int8 digits on VNNI (faster than f32 FMA, as accurate).
    if (mode == QuantMode::kExact && dtype == DType::kTQ2_0_G128 && qd::avx512::exact_i8_kernels(dtype)) {
      p.kind = PanelKind::kI8x3;
      p.kernels = qd::avx512::exact_i8_kernels(dtype);
      return p;
    }
    if (amx && p.kind == PanelKind::kI8) p.kernels = qd::amx::kernels(dtype, p.kind);
    if (!p.kernels) p.kernels = qd::avx512::kernels(dtype, p.kind);
    // bf16 weights with bf16 activations: oneDNN's matmul where AMX runs it (5.3x ggml against our
    // kernel's 3.3x). Without AMX our vdpbf16ps kernel: oneDNN's steady state is ~12 % faster
    // there, but it keeps a reordered copy of every weight (twice the weights' memory) and makes
    // it on first use, so a model's first forward is slower (Qwen3-4B-shaped encode on Zen 4:
    // 10.9-14.7 s and 10.5 GB against 8.3-8.9 s and 5.4 GB; docs/PERFORMANCE.md).
    p.onednn = p.kind == PanelKind::kBf16 && p.kernels && bf16_via_onednn(amx) && quant::onednn_bf16_available();
  } else if (isa == CpuIsa::kAvx2) {
    p.kernels = qd::avx2::kernels(dtype, p.kind);
  }
#endif
  return p;
}

KernelTable build(CpuIsa isa, bool amx) {
  KernelTable t;
  t.isa = isa;
  t.amx = amx;
  const IsaKernels k = isa_kernels(isa);
  for (size_t d = 0; d < size_t(DType::kCount); ++d) t.linear[d] = k.linear(DType(d));
  t.gelu_tanh = k.gelu_tanh;
  t.silu = k.silu;
  t.gelu_erf = k.gelu_erf;
  t.attention_pack = k.attention_pack;
  t.attention_tile = k.attention_tile;

  qd::QuantKernels& q = t.quant;
  for (size_t d = 0; d < size_t(DType::kCount); ++d)
    for (QuantMode mode : {QuantMode::kExact, QuantMode::kA8})
      q.plan[d][size_t(mode)] = quant_plan(isa, amx, DType(d), mode);
  q.prep_i8_rows = qd::prep_i8_rows;
  q.prep_bf16_rows = qd::prep_bf16_rows;
#if defined(__x86_64__)
  if (isa == CpuIsa::kAvx512) {
    q.prep_i8_rows = qd::avx512::prep_i8_rows;
    q.prep_bf16_rows = qd::avx512::prep_bf16_rows;
    if (amx) q.prep_bf16x3_rows = qd::amx::prep_bf16x3_rows;
    q.prep_i8x3_rows = qd::avx512::prep_i8x3_rows;
  } else if (isa == CpuIsa::kAvx2) {
    q.prep_i8_rows = qd::avx2::prep_i8_rows;
  }
#endif
  // AVX-512 (Zen 4, M = 1024, K = N = 3072): fused 1.01-1.02x sgemm, f32 panels + sgemm 0.93-0.96x.
  // AVX2 (Zen 3): level (0.96-0.99x against 0.97-1.01x), so the sgemm route stays there.
  q.f16_fused = isa == CpuIsa::kAvx512 && q.plan[size_t(DType::kF16)][size_t(QuantMode::kExact)].kernels;
  return t;
}

std::atomic<const KernelTable*> g_override{nullptr};

}  // namespace

const KernelTable& kernel_table_for(CpuIsa isa, bool amx) {
  if (int(isa) > int(cpu_hardware_isa())) isa = cpu_hardware_isa();
  amx = amx && isa == CpuIsa::kAvx512 && quant::detail::amx::supported();
  static std::once_flag once[3][2];
  static KernelTable tables[3][2];
  const size_t i = size_t(isa), j = amx ? 1 : 0;
  std::call_once(once[i][j], [&] { tables[i][j] = build(isa, amx); });
  return tables[i][j];
}

const KernelTable& kernel_table_for(CpuIsa isa) { return kernel_table_for(isa, quant::detail::amx::wanted()); }

const KernelTable& kernel_table() {
  if (const KernelTable* t = g_override.load(std::memory_order_acquire)) return *t;
  static const KernelTable& chosen = kernel_table_for(cpu_isa());
  return chosen;
}

void set_kernel_table_override(const KernelTable* table) { g_override.store(table, std::memory_order_release); }

}  // namespace quill::cpu
