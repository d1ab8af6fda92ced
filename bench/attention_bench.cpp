// Flash attention vs the naive reference at SD3 shapes (24 heads x 64), batch 1, self-attention.
// Counters: GFLOP/s (4 S^2 H Dh per call), peak scratch bytes, threads. Pool size: QUILL_THREADS
// or the hardware concurrency.
#include <benchmark/benchmark.h>

#include <random>
#include <vector>

#include "backend/cpu/ops.h"

namespace {

constexpr int64_t kHeads = 24, kDh = 64;

struct Inputs {
  std::vector<float> q, k, v, out;
  explicit Inputs(int64_t S) {
    const size_t n = size_t(S * kHeads * kDh);
    std::mt19937 rng(1);
    std::normal_distribution<float> dist;
    for (auto* t : {&q, &k, &v}) {
      t->resize(n);
      for (auto& x : *t) x = dist(rng);
    }
    out.resize(n);
  }
};

void set_counters(benchmark::State& state, int64_t S, double scratch_bytes, int threads) {
  const double flops = 4.0 * double(S) * double(S) * kHeads * kDh;
  state.counters["GFLOP/s"] =
      benchmark::Counter(flops * 1e-9 * double(state.iterations()), benchmark::Counter::kIsRate);
  state.counters["scratch_bytes"] = scratch_bytes;
  state.counters["threads"] = threads;
}

void BM_AttentionFlash(benchmark::State& state) {
  const int64_t S = state.range(0);
  quill::ThreadPool& pool = quill::ThreadPool::global();
  Inputs in(S);
  std::vector<float> scratch(quill::cpu::attention_scratch_floats(S, kDh, pool));
  for (auto _ : state) {
    quill::cpu::attention(in.q.data(), in.k.data(), in.v.data(), in.out.data(), 1, S, S, kHeads, kDh, 0.125f,
                          scratch.data(), pool);
    benchmark::DoNotOptimize(in.out.data());
  }
  set_counters(state, S, double(scratch.size() * sizeof(float)), pool.num_threads());
}
BENCHMARK(BM_AttentionFlash)->Arg(1024)->Arg(4096)->Unit(benchmark::kMillisecond)->UseRealTime();

// Single-threaded (the reference takes no pool); scratch is its materialised score row.
void BM_AttentionNaive(benchmark::State& state) {
  const int64_t S = state.range(0);
  Inputs in(S);
  for (auto _ : state) {
    quill::cpu::attention_naive(in.q.data(), in.k.data(), in.v.data(), in.out.data(), 1, S, S, kHeads, kDh, 0.125f);
    benchmark::DoNotOptimize(in.out.data());
  }
  set_counters(state, S, double(S * sizeof(float)), 1);
}
BENCHMARK(BM_AttentionNaive)->Arg(1024)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_AttentionNaive)->Arg(4096)->Iterations(1)->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace

BENCHMARK_MAIN();
