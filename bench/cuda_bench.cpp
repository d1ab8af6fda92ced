// GPU timings of Quill's CUDA kernels on device-resident data (CUDA events; no Google Benchmark):
//   ternary W2A16 GEMM vs cuBLASLt bf16 at M = 4096, K = N = 3072 (and a small-M case),
//   flash attention at seq 4096, head dim 64 and 128 (24 heads),
//   a DiT-block-like op sequence launched eagerly vs replayed from a CUDA graph,
//   and the host-staged backend linear (today's Dispatcher path) for the transfer cost.
// Prints a table, then machine-readable lines "CSV,quill,<op>,<shape>,<ms>,<rate>,<unit>" that
// scripts/device-check.sh merges with tools/bench_torch_cuda.py's.
#include <cuda_runtime_api.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "backend/cuda/cuda_backend.h"
#include "backend/cuda/device_memory.h"
#include "backend/cuda/kernels.h"
#include "backend/cuda/lt_gemm.h"
#include "backend/cuda/tq2_layout.h"
#include "runtime/gpu_policy.h"

namespace quill::cuda {
namespace {

struct Row {
  std::string op, shape;
  double ms, rate;
  const char* unit;
};
std::vector<Row> g_rows;

#define BENCH_CHECK(expr)                                                                         \
  do {                                                                                            \
    const cudaError_t e_ = (expr);                                                                \
    if (e_ != cudaSuccess) {                                                                      \
      std::fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #expr, cudaGetErrorString(e_)); \
      return false;                                                                               \
    }                                                                                             \
  } while (0)
#define BENCH_STATUS(expr)                                                             \
  do {                                                                                 \
    const Status s_ = (expr);                                                          \
    if (!s_.is_ok()) {                                                                 \
      std::fprintf(stderr, "%s:%d: %s\n", __FILE__, __LINE__, s_.to_string().c_str()); \
      return false;                                                                    \
    }                                                                                  \
  } while (0)

// Device buffer filled from host data.
template <typename T>
bool upload(DeviceBuffer& d, const std::vector<T>& h) {
  if (!d.reserve(h.size() * sizeof(T)).is_ok()) return false;
  return cudaMemcpy(d.data(), h.data(), h.size() * sizeof(T), cudaMemcpyHostToDevice) == cudaSuccess;
}

std::vector<uint16_t> random_bf16(size_t n, uint32_t seed, float sd) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> dist(0.0f, sd);
  std::vector<uint16_t> v(n);
  for (auto& x : v) x = ::quill::f32_to_bf16(dist(rng));
  return v;
}

// Mean milliseconds per call of `fn` over `iters` calls after `warmup` calls.
template <typename F>
bool time_ms(cudaStream_t stream, int warmup, int iters, F&& fn, double* ms) {
  for (int i = 0; i < warmup; ++i)
    if (!fn()) return false;
  cudaEvent_t a, b;
  BENCH_CHECK(cudaEventCreate(&a));
  BENCH_CHECK(cudaEventCreate(&b));
  BENCH_CHECK(cudaEventRecord(a, stream));
  for (int i = 0; i < iters; ++i)
    if (!fn()) return false;
  BENCH_CHECK(cudaEventRecord(b, stream));
  BENCH_CHECK(cudaEventSynchronize(b));
  float total = 0;
  BENCH_CHECK(cudaEventElapsedTime(&total, a, b));
  cudaEventDestroy(a);
  cudaEventDestroy(b);
  *ms = double(total) / iters;
  return true;
}

void add(const std::string& op, const std::string& shape, double ms, double rate, const char* unit) {
  g_rows.push_back({op, shape, ms, rate, unit});
  std::printf("  %-34s %-28s %9.4f ms  %9.1f %s\n", op.c_str(), shape.c_str(), ms, rate, unit);
}

bool bench_gemm(cudaStream_t stream, LtGemm& lt, int64_t M, int64_t N, int64_t K) {
  DeviceBuffer x, w_bf16, codes, scales, y;
  if (!upload(x, random_bf16(size_t(M * K), 1, 1.0f)) || !upload(w_bf16, random_bf16(size_t(N * K), 2, 0.02f)))
    return false;
  std::vector<uint8_t> blocks(size_t(N * (K / 128) * 34));
  std::mt19937 rng(3);
  for (size_t i = 0; i < blocks.size(); ++i) blocks[i] = uint8_t(rng());
  for (size_t b = 0; b < blocks.size(); b += 34) {
    const uint16_t d = ::quill::f32_to_f16(0.02f);
    std::memcpy(&blocks[b + 32], &d, 2);
  }
  std::vector<uint8_t> hc(size_t(tq2_codes_bytes(N, K)));
  std::vector<uint16_t> hs(size_t(tq2_scales_count(N, K)));
  tq2_repack(blocks.data(), N, K, hc.data(), hs.data());
  if (!upload(codes, hc) || !upload(scales, hs)) return false;
  BENCH_STATUS(y.reserve(size_t(M * N) * 4));
  const double flop = 2.0 * double(M) * double(N) * double(K);
  const std::string shape = "M" + std::to_string(M) + " K" + std::to_string(K) + " N" + std::to_string(N);
  double ms = 0;
  const int iters = M >= 1024 ? 20 : 200;
  if (!time_ms(
          stream, 3, iters,
          [&] {
            return ternary_gemm(x.as<uint16_t>(), codes.as<uint8_t>(), scales.as<uint16_t>(), nullptr, y.as<float>(), M,
                                N, K, stream) == cudaSuccess;
          },
          &ms))
    return false;
  add("ternary_w2a16_gemm", shape, ms, flop / ms / 1e9, "TFLOP/s");
  if (!time_ms(
          stream, 3, iters,
          [&] {
            return lt.bf16_linear(x.as<uint16_t>(), w_bf16.as<uint16_t>(), y.as<float>(), M, N, K, stream).is_ok();
          },
          &ms))
    return false;
  add("cublaslt_bf16_gemm", shape, ms, flop / ms / 1e9, "TFLOP/s");
  return true;
}

bool bench_attention(cudaStream_t stream, int64_t B, int64_t H, int64_t S, int64_t Dh) {
  DeviceBuffer q, k, v, o;
  const size_t n = size_t(B * S * H * Dh);
  if (!upload(q, random_bf16(n, 4, 1.0f)) || !upload(k, random_bf16(n, 5, 1.0f)) || !upload(v, random_bf16(n, 6, 1.0f)))
    return false;
  BENCH_STATUS(o.reserve(n * 4));
  double ms = 0;
  if (!time_ms(
          stream, 3, 20,
          [&] {
            return flash_attention_bf16(q.as<uint16_t>(), k.as<uint16_t>(), v.as<uint16_t>(), o.as<float>(), B, S, S, H,
                                        Dh, 0.125f, stream) == cudaSuccess;
          },
          &ms))
    return false;
  const double flop = 4.0 * double(B) * double(H) * double(S) * double(S) * double(Dh);
  add("flash_attention_bf16",
      "B" + std::to_string(B) + " H" + std::to_string(H) + " S" + std::to_string(S) + " Dh" + std::to_string(Dh), ms,
      flop / ms / 1e9, "TFLOP/s");
  return true;
}

// One DiT MLP half-block at M tokens, width D: adaLN modulate, fc1 (D -> 4D), GELU, fc2 (4D -> D),
// gated residual. Seven launches, small enough that launch overhead shows.
bool bench_graph(cudaStream_t stream, LtGemm& lt, int64_t M, int64_t D) {
  DeviceBuffer x, h, xb, hb, act, w1, w2, mod;
  if (!upload(x, std::vector<float>(size_t(M * D), 0.5f)) || !upload(mod, std::vector<float>(size_t(6 * D), 0.1f)) ||
      !upload(w1, random_bf16(size_t(4 * D * D), 7, 0.02f)) || !upload(w2, random_bf16(size_t(4 * D * D), 8, 0.02f)))
    return false;
  BENCH_STATUS(h.reserve(size_t(M * D) * 4));
  BENCH_STATUS(xb.reserve(size_t(M * D) * 2));
  BENCH_STATUS(act.reserve(size_t(M * 4 * D) * 4));
  BENCH_STATUS(hb.reserve(size_t(M * 4 * D) * 2));
  auto block = [&]() -> bool {
    if (layer_norm_modulate(x.as<float>(), h.as<float>(), 1, M, D, 1e-6f, mod.as<float>(), mod.as<float>() + D, 6 * D,
                            stream) != cudaSuccess)
      return false;
    if (f32_to_bf16(h.as<float>(), xb.as<uint16_t>(), M * D, stream) != cudaSuccess) return false;
    if (!lt.bf16_linear(xb.as<uint16_t>(), w1.as<uint16_t>(), act.as<float>(), M, 4 * D, D, stream).is_ok())
      return false;
    if (gelu_tanh(act.as<float>(), M * 4 * D, stream) != cudaSuccess) return false;
    if (f32_to_bf16(act.as<float>(), hb.as<uint16_t>(), M * 4 * D, stream) != cudaSuccess) return false;
    if (!lt.bf16_linear(hb.as<uint16_t>(), w2.as<uint16_t>(), h.as<float>(), M, D, 4 * D, stream).is_ok()) return false;
    return gated_residual(x.as<float>(), h.as<float>(), mod.as<float>() + 2 * D, 1, M, D, 6 * D, stream) == cudaSuccess;
  };
  const std::string shape = "M" + std::to_string(M) + " D" + std::to_string(D) + " (7 launches)";
  double eager = 0, replay = 0;
  if (!time_ms(stream, 3, 100, block, &eager)) return false;
  add("dit_mlp_eager", shape, eager, 0, "-");
  if (!gpu_policy().cuda_graphs) {
    std::printf("  (graph replay skipped: QUILL_CUDA_GRAPHS=0)\n");
    return true;
  }
  cudaGraph_t graph;
  cudaGraphExec_t exec;
  BENCH_CHECK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal));
  const bool ok = block();
  BENCH_CHECK(cudaStreamEndCapture(stream, &graph));
  if (!ok) return false;
  BENCH_CHECK(cudaGraphInstantiate(&exec, graph, 0));
  if (!time_ms(
          stream, 3, 100, [&] { return cudaGraphLaunch(exec, stream) == cudaSuccess; }, &replay))
    return false;
  add("dit_mlp_graph_replay", shape, replay, eager / replay, "x faster");
  cudaGraphExecDestroy(exec);
  cudaGraphDestroy(graph);
  return true;
}

// Today's Dispatcher path: host pointers in and out of CudaBackend::linear (weight resident).
bool bench_host_staged(int64_t M, int64_t N, int64_t K) {
  auto backend = CudaBackend::create();
  BENCH_STATUS(backend.status());
  std::vector<uint16_t> w = random_bf16(size_t(N * K), 9, 0.02f);
  const Tensor W(w.data(), DType::kBF16, {N, K});
  std::vector<float> x(size_t(M * K), 0.25f), y(size_t(M * N));
  BENCH_STATUS((*backend)->linear(x.data(), M, W, nullptr, y.data(), {}));  // uploads the weight
  const auto t0 = std::chrono::steady_clock::now();
  const int iters = 10;
  for (int i = 0; i < iters; ++i) BENCH_STATUS((*backend)->linear(x.data(), M, W, nullptr, y.data(), {}));
  const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count() / iters;
  const double flop = 2.0 * double(M) * double(N) * double(K);
  add("host_staged_backend_linear_bf16", "M" + std::to_string(M) + " K" + std::to_string(K) + " N" + std::to_string(N),
      ms, flop / ms / 1e9, "TFLOP/s");
  return true;
}

int run() {
  if (CudaBackend::device_count() == 0) {
    std::printf("no CUDA device: nothing to time\n");
    return 0;
  }
  cudaDeviceProp p{};
  cudaGetDeviceProperties(&p, 0);
  std::printf("device: %s (sm_%d%d, %d SMs)\n", p.name, p.major, p.minor, p.multiProcessorCount);
  cudaStream_t stream;
  if (cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking) != cudaSuccess) return 1;
  auto lt = LtGemm::create();
  if (!lt.is_ok()) {
    std::fprintf(stderr, "%s\n", lt.status().to_string().c_str());
    return 1;
  }
  bool ok = bench_gemm(stream, **lt, 4096, 3072, 3072);
  ok = bench_gemm(stream, **lt, 256, 3072, 3072) && ok;
  ok = bench_attention(stream, 1, 24, 4096, 64) && ok;
  ok = bench_attention(stream, 1, 24, 4096, 128) && ok;
  ok = bench_graph(stream, **lt, 256, 1536) && ok;
  ok = bench_host_staged(4096, 3072, 3072) && ok;
  for (const auto& r : g_rows)
    std::printf("CSV,quill,%s,%s,%.5f,%.2f,%s\n", r.op.c_str(), r.shape.c_str(), r.ms, r.rate, r.unit);
  cudaStreamDestroy(stream);
  return ok ? 0 : 1;
}

}  // namespace
}  // namespace quill::cuda

int main() { return quill::cuda::run(); }
