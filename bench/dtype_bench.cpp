// Conversion throughput of the scalar reference converters (the baseline SIMD paths must beat).
#include <benchmark/benchmark.h>

#include <random>
#include <vector>

#include "quill/dtype.h"

namespace {

void BM_F32ToBF16(benchmark::State& state) {
  const int64_t n = state.range(0);
  std::vector<float> in(static_cast<size_t>(n));
  std::mt19937 rng(1);
  std::normal_distribution<float> dist;
  for (auto& v : in) v = dist(rng);
  std::vector<uint16_t> out(static_cast<size_t>(n));
  for (auto _ : state) {
    quill::convert_from_f32(quill::DType::kBF16, in.data(), out.data(), n);
    benchmark::DoNotOptimize(out.data());
  }
  state.SetItemsProcessed(state.iterations() * n);
}
BENCHMARK(BM_F32ToBF16)->Arg(1 << 16);

void BM_F16ToF32(benchmark::State& state) {
  const int64_t n = state.range(0);
  std::vector<uint16_t> in(static_cast<size_t>(n), 0x3c00);
  std::vector<float> out(static_cast<size_t>(n));
  for (auto _ : state) {
    quill::convert_to_f32(quill::DType::kF16, in.data(), out.data(), n);
    benchmark::DoNotOptimize(out.data());
  }
  state.SetItemsProcessed(state.iterations() * n);
}
BENCHMARK(BM_F16ToF32)->Arg(1 << 16);

}  // namespace

BENCHMARK_MAIN();
