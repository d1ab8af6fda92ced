// The CPU kernels for one instruction-set level, chosen once. Ops take their kernels from
// kernel_table() instead of testing the ISA on every call; kernel_table.cpp is the one place that
// maps (ISA, dtype) to kernels.
#pragma once

#include <cstddef>

#include "backend/cpu/kernels.h"
#include "core/cpu_features.h"
#include "quant/quant_kernels.h"
#include "quill/dtype.h"

namespace quill::cpu {

struct KernelTable {
  CpuIsa isa = CpuIsa::kScalar;
  bool amx = false;  // the AMX tile kernels are in use (AVX-512 level, CPU and OS allow them)

  LinearKernels linear[size_t(DType::kCount)];  // by weight dtype
  UnaryFn gelu_tanh = nullptr;
  UnaryFn silu = nullptr;
  UnaryFn gelu_erf = nullptr;
  AttentionPackFn attention_pack = nullptr;  // null: the tile reads K and V where they are
  AttentionTileFn attention_tile = nullptr;
  quant::detail::QuantKernels quant;  // quant_linear, by weight dtype and mode
};

// The table the ops use: the level cpu_isa() reports (the hardware's, capped by QUILL_CPU_ISA) with
// AMX unless QUILL_AMX=0. Chosen on first use.
const KernelTable& kernel_table();

// The table of `isa` (capped at what the hardware runs), with the AMX kernels if `amx` and the CPU
// and OS allow them; `isa` alone takes AMX as QUILL_AMX says. Each table is built once, on first
// request (thread-safe), and lives as long as the process.
const KernelTable& kernel_table_for(CpuIsa isa, bool amx);
const KernelTable& kernel_table_for(CpuIsa isa);

// Tests: kernel_table() returns `table` until called again with null (back to the default).
void set_kernel_table_override(const KernelTable* table);

}  // namespace quill::cpu
