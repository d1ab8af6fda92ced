// linear at SD3 sizes: M = 1024 tokens, K = N = 1536 (SD3-medium width) and 3072, f32 and bf16
// (and f16) weights, plus the few-rows path (M = 2, a CFG batch's adaLN modulation: N = 6 * 1536).
// Counter GFLOP/s = 2 M N K per call. Pool size: QUILL_THREADS or the hardware concurrency.
#include <benchmark/benchmark.h>

#include <random>
#include <vector>

#include "backend/cpu/ops.h"
#include "quill/dtype.h"
#include "quill/tensor.h"

namespace {

void BM_Linear(benchmark::State& state) {
  const int64_t M = state.range(0), N = state.range(1), K = state.range(2);
  const auto dtype = quill::DType(state.range(3));
  quill::ThreadPool& pool = quill::ThreadPool::global();
  std::mt19937 rng(1);
  std::normal_distribution<float> dist(0.0f, 0.05f);
  std::vector<float> w32(static_cast<size_t>(N * K)), x(static_cast<size_t>(M * K));
  std::vector<float> bias(static_cast<size_t>(N)), y(static_cast<size_t>(M * N));
  for (auto& v : w32) v = dist(rng);
  for (auto& v : x) v = dist(rng);
  for (auto& v : bias) v = dist(rng);
  quill::Tensor W = quill::Tensor::empty(dtype, quill::Shape{N, K});
  quill::convert_from_f32(dtype, w32.data(), W.data(), N * K);
  std::vector<float> scratch(quill::cpu::linear_scratch_floats(W, pool) + 1);
  for (auto _ : state) {
    quill::cpu::linear(x.data(), M, W, bias.data(), y.data(), scratch.data(), pool);
    benchmark::DoNotOptimize(y.data());
  }
  state.counters["GFLOP/s"] =
      benchmark::Counter(2.0 * double(M * N * K) * 1e-9 * double(state.iterations()), benchmark::Counter::kIsRate);
  state.counters["threads"] = pool.num_threads();
  state.SetLabel(quill::dtype_name(dtype));
}

constexpr int64_t kF32 = int64_t(quill::DType::kF32), kBF16 = int64_t(quill::DType::kBF16),
                  kF16 = int64_t(quill::DType::kF16);

BENCHMARK(BM_Linear)
    ->ArgNames({"M", "N", "K", "dtype"})
    ->Args({1024, 1536, 1536, kF32})
    ->Args({1024, 1536, 1536, kBF16})
    ->Args({1024, 1536, 1536, kF16})
    ->Args({1024, 3072, 3072, kF32})
    ->Args({1024, 3072, 3072, kBF16})
    ->Args({2, 9216, 1536, kF32})
    ->Args({2, 9216, 1536, kBF16})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

}  // namespace

BENCHMARK_MAIN();
