// The CPU kernel table: one per level, built once, complete, and what the ops use.
#include "backend/cpu/kernel_table.h"

#include <gtest/gtest.h>

#include <thread>
#include <vector>

#include "backend/op_test_util.h"
#include "quant/quant_linear.h"

namespace quill {
namespace {

using testing_ops::IsaScope;
using testing_ops::testable_isas;

TEST(CpuKernelTable, DefaultIsTheLevelInForce) {
  EXPECT_EQ(cpu::kernel_table().isa, cpu_isa());
  EXPECT_EQ(&cpu::kernel_table(), &cpu::kernel_table_for(cpu_isa()));
}

TEST(CpuKernelTable, LevelsAboveTheHardwareAreCapped) {
  EXPECT_EQ(cpu::kernel_table_for(CpuIsa::kAvx512).isa, cpu_hardware_isa());
  EXPECT_FALSE(cpu::kernel_table_for(CpuIsa::kAvx2, true).amx);  // AMX only beside AVX-512
}

TEST(CpuKernelTable, EachTableIsBuiltOnceAcrossThreads) {
  std::vector<const cpu::KernelTable*> seen(8);
  std::vector<std::thread> threads;
  for (size_t i = 0; i < seen.size(); ++i)
    threads.emplace_back([&seen, i] { seen[i] = &cpu::kernel_table_for(CpuIsa(int(i % 3)), false); });
  for (auto& t : threads) t.join();
  for (size_t i = 0; i < seen.size(); ++i) EXPECT_EQ(seen[i], &cpu::kernel_table_for(CpuIsa(int(i % 3)), false));
}

TEST(CpuKernelTable, EveryLevelHasEveryKernel) {
  for (CpuIsa isa : testable_isas()) {
    SCOPED_TRACE(cpu_isa_name(isa));
    const cpu::KernelTable& t = cpu::kernel_table_for(isa);
    EXPECT_EQ(t.isa, isa);
    for (DType d : {DType::kF32, DType::kF16, DType::kBF16}) EXPECT_NE(t.linear[size_t(d)].gemv, nullptr);
    for (DType d : {DType::kF16, DType::kBF16}) EXPECT_NE(t.linear[size_t(d)].decode, nullptr);
    EXPECT_TRUE(t.gelu_tanh && t.silu && t.gelu_erf && t.attention_tile);
    EXPECT_EQ(t.attention_pack != nullptr, isa != CpuIsa::kScalar);
    EXPECT_TRUE(t.quant.prep_i8_rows && t.quant.prep_bf16_rows);
    for (DType d : {DType::kTQ2_0_G128, DType::kQ8_0, DType::kBF16, DType::kF16, DType::kF8E4M3})
      for (quant::QuantMode m : {quant::QuantMode::kExact, quant::QuantMode::kA8}) {
        const quant::detail::QuantPlan& p = t.quant.plan[size_t(d)][size_t(m)];
        // Every (dtype, mode) has SIMD kernels at AVX-512; AVX2 has them for f32 activations.
        SCOPED_TRACE(testing::Message() << dtype_name(d) << " " << quant::quant_mode_name(m));
        if (isa == CpuIsa::kAvx512 || (isa == CpuIsa::kAvx2 && p.kind == quant::detail::PanelKind::kF32)) {
          EXPECT_NE(p.kernels, nullptr);
        }
        if (isa == CpuIsa::kScalar) {
          EXPECT_EQ(p.kernels, nullptr);
        }
        if (p.kind == quant::detail::PanelKind::kBf16x3) {
          EXPECT_NE(t.quant.prep_bf16x3_rows, nullptr);
        }
        if (p.kind == quant::detail::PanelKind::kI8x3) {
          EXPECT_NE(t.quant.prep_i8x3_rows, nullptr);
        }
      }
  }
}

TEST(CpuKernelTable, ScopeSwitchesTheOpsTableAndRestoresIt) {
  const cpu::KernelTable* before = &cpu::kernel_table();
  {
    IsaScope scope(CpuIsa::kScalar);
    EXPECT_EQ(cpu::kernel_table().isa, CpuIsa::kScalar);
  }
  EXPECT_EQ(&cpu::kernel_table(), before);
}

}  // namespace
}  // namespace quill
