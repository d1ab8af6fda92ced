#include "backend/cpu/kernel_table.h"

#include <atomic>
#include <mutex>

#include "backend/cpu/gelu_erf.h"

namespace quill::cpu {

namespace {

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
    return {avx2::linear_kernels, avx2::gelu_tanh, avx2::silu, avx2::gelu_erf, nullptr, avx2::attention_tile};
#endif
  return {scalar::linear_kernels, scalar::gelu_tanh, scalar::silu, scalar::gelu_erf, nullptr, scalar::attention_tile};
}

KernelTable build(CpuIsa isa) {
  KernelTable t;
  t.isa = isa;
  const IsaKernels k = isa_kernels(isa);
  for (size_t d = 0; d < size_t(DType::kCount); ++d) t.linear[d] = k.linear(DType(d));
  t.gelu_tanh = k.gelu_tanh;
  t.silu = k.silu;
  t.gelu_erf = k.gelu_erf;
  t.attention_pack = k.attention_pack;
  t.attention_tile = k.attention_tile;
  return t;
}

std::atomic<const KernelTable*> g_override{nullptr};

}  // namespace

const KernelTable& kernel_table_for(CpuIsa isa) {
  if (int(isa) > int(cpu_hardware_isa())) isa = cpu_hardware_isa();
  static std::once_flag once[3];
  static KernelTable tables[3];
  const size_t i = size_t(isa);
  std::call_once(once[i], [&] { tables[i] = build(isa); });
  return tables[i];
}

const KernelTable& kernel_table() {
  if (const KernelTable* t = g_override.load(std::memory_order_acquire)) return *t;
  static const KernelTable& chosen = kernel_table_for(cpu_isa());
  return chosen;
}

void set_kernel_table_override(const KernelTable* table) { g_override.store(table, std::memory_order_release); }

}  // namespace quill::cpu
