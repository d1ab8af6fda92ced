// `quill bench-gemm`: GFLOP/s of linear (y = x W^T) by weight type (quant_linear's kernels, and with
// `-decode` the f32-panel + sgemm route the op layer gives f16 / bf16 weights), against OpenBLAS sgemm and
// oneDNN's bf16 matmul measured in the same run. Each type is prepared once (weights converted), then
// timed in rounds that run every type once, so the sgemm baseline and each row are timed interleaved:
// on VMs whose speed drifts by ±20 % over seconds, timing all runs of one type before the next biased
// the ratios by the order of the rows. Medians over --reps rounds.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "backend/cpu/blas_core.h"
#include "backend/cpu/ops.h"
#include "cli/command.h"
#include "core/cpu_features.h"
#include "core/thread_pool.h"
#include "quant/formats.h"
#include "quant/quant_linear.h"

#if defined(QUILL_HAVE_OPENBLAS)
#include <cblas.h>
#endif
#if defined(QUILL_HAVE_DNNL)
#include <dnnl.hpp>
#endif

namespace quill::cli {
namespace {

struct Options {
  std::vector<int64_t> m{1024}, k{3072}, n{3072};
  std::vector<std::string> types{"f32-openblas", "bf16-onednn", "tq2-exact", "tq2-a8",
                                 "q8_0",         "bf16",        "f16",       "f16-decode"};
  int threads = 0;
  int reps = 5;
  bool json = false;
};

using Run = std::function<void()>;

// One run of `type` with its weights prepared, or an empty function with `why` set when it cannot
// run here. Errors of quant_linear inside a run land in `status`.
Run prepare(const std::string& type, int64_t M, int64_t K, int64_t N, const std::vector<float>& x,
            const std::vector<float>& w, std::vector<float>& y, ThreadPool& pool, std::string* why, Status* status) {
  if (type == "f32-openblas") {
#if defined(QUILL_HAVE_OPENBLAS)
    return [&x, &w, &y, M, K, N, threads = pool.num_threads()] {
      openblas_set_num_threads(threads);
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, int(M), int(N), int(K), 1.0f, x.data(), int(K), w.data(),
                  int(K), 0.0f, y.data(), int(N));
    };
#else
    *why = "built without OpenBLAS";
    return {};
#endif
  }
  if (type == "bf16-onednn") {
#if defined(QUILL_HAVE_DNNL)
    using namespace dnnl;
    try {  // oneDNN throws where the CPU has no bf16 matmul (AVX2 without AVX512_BF16)
      struct State {
        engine eng{engine::kind::cpu, 0};
        stream st{eng};
        std::vector<uint16_t> xb, wb;
        memory a_m, b_m, c_m;
        matmul mm;
      };
      auto s = std::make_shared<State>();
      memory::desc a_md({M, K}, memory::data_type::bf16, memory::format_tag::ab);
      memory::desc b_md({K, N}, memory::data_type::bf16, memory::format_tag::ba);  // W [N, K] read as W^T
      memory::desc c_md({M, N}, memory::data_type::f32, memory::format_tag::ab);
      s->xb.resize(x.size());
      s->wb.resize(w.size());
      for (size_t i = 0; i < x.size(); ++i) s->xb[i] = f32_to_bf16(x[i]);
      for (size_t i = 0; i < w.size(); ++i) s->wb[i] = f32_to_bf16(w[i]);
      s->a_m = memory(a_md, s->eng, s->xb.data());
      s->b_m = memory(b_md, s->eng, s->wb.data());
      s->c_m = memory(c_md, s->eng, y.data());
#if DNNL_VERSION_MAJOR >= 3
      s->mm = matmul(matmul::primitive_desc(s->eng, a_md, b_md, c_md));
#else
      s->mm = matmul(matmul::primitive_desc(matmul::desc(a_md, b_md, c_md), s->eng));
#endif
      return [s] {
        s->mm.execute(s->st, {{DNNL_ARG_SRC, s->a_m}, {DNNL_ARG_WEIGHTS, s->b_m}, {DNNL_ARG_DST, s->c_m}});
        s->st.wait();
      };
    } catch (const dnnl::error& e) {
      *why = std::string("oneDNN: ") + e.what();
      return {};
    }
#else
    *why = "built without oneDNN";
    return {};
#endif
  }
  if (type == "f16-decode" || type == "bf16-decode") {  // cpu::linear: f32 panels decoded, then OpenBLAS sgemm
    auto q = quant::quantize_tensor(Tensor(const_cast<float*>(w.data()), DType::kF32, Shape{N, K}),
                                    type == "f16-decode" ? DType::kF16 : DType::kBF16);
    if (!q.is_ok()) {
      *why = q.status().to_string();
      return {};
    }
    auto scratch = std::make_shared<std::vector<float>>(cpu::linear_scratch_floats(*q, pool));
    return [q = std::make_shared<Tensor>(std::move(*q)), scratch, &x, &y, &pool, M] {
      cpu::linear(x.data(), M, *q, nullptr, y.data(), scratch->data(), pool);
    };
  }
  DType dt;
  quant::QuantMode mode = quant::QuantMode::kA8;
  if (type == "tq2-exact")
    dt = DType::kTQ2_0_G128, mode = quant::QuantMode::kExact;
  else if (type == "tq2-a8")
    dt = DType::kTQ2_0_G128;
  else if (type == "q8_0")
    dt = DType::kQ8_0;
  else if (type == "q8_0-exact")
    dt = DType::kQ8_0, mode = quant::QuantMode::kExact;
  else if (type == "bf16")
    dt = DType::kBF16;
  else if (type == "f16")
    dt = DType::kF16, mode = quant::QuantMode::kExact;
  else if (type == "f32-panel")
    dt = DType::kF32, mode = quant::QuantMode::kExact;
  else {
    *why = "unknown type";
    return {};
  }
  const Tensor w32(const_cast<float*>(w.data()), DType::kF32, Shape{N, K});
  auto q = dt == DType::kF32 ? Result<Tensor>(w32) : quant::quantize_tensor(w32, dt);
  if (!q.is_ok()) {
    *why = q.status().to_string();
    return {};
  }
  auto scratch = std::make_shared<std::vector<uint8_t>>(quant::quant_linear_scratch_bytes(M, *q, mode, pool));
  return [q = std::make_shared<Tensor>(std::move(*q)), scratch, &x, &y, &pool, M, mode, status] {
    Status st = quant::quant_linear(x.data(), M, *q, nullptr, nullptr, y.data(), scratch->data(), mode, pool);
    if (!st.is_ok()) *status = st;
  };
}

// Median seconds per run, over rounds that run each type in turn; a run that is empty gets -1.
// Before each timed run: 100 ms idle, so the previous library's workers stop spinning (OpenBLAS's
// pthreads poll for 2^28 cycles, ~70 ms, after a call; oneDNN's OpenMP threads spin too), then one
// untimed run to bring this type's weights and threads back.
std::vector<double> time_interleaved(const std::vector<Run>& runs, int reps) {
  std::vector<std::vector<double>> t(runs.size());
  for (int rep = 0; rep < reps; ++rep)
    for (size_t i = 0; i < runs.size(); ++i) {
      if (!runs[i]) continue;
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
      runs[i]();
      const auto a = std::chrono::steady_clock::now();
      runs[i]();
      t[i].push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - a).count());
    }
  std::vector<double> med(runs.size(), -1.0);
  for (size_t i = 0; i < runs.size(); ++i) {
    if (t[i].empty()) continue;
    std::sort(t[i].begin(), t[i].end());
    med[i] = t[i][t[i].size() / 2];
  }
  return med;
}

int run(const Options& o) {
  const int threads = o.threads > 0 ? o.threads : default_thread_count();
  ThreadPool pool(threads);
  nlohmann::json rows = nlohmann::json::array();
  cpu::ensure_blas_core();  // before the first BLAS call, as the engine does
  const std::string blas = cpu::blas_core_name(), blas_switch = cpu::blas_core_switch();
  if (!o.json)
    std::printf(
        "threads %d, isa %s, openblas core %s%s, reps %d (median, rounds interleave the types)\n%-14s %6s %6s %6s %10s "
        "%10s %9s\n",
        threads, cpu_isa_name(cpu_isa()), blas.empty() ? "-" : blas.c_str(),
        blas_switch.empty() ? "" : (" (" + blas_switch + ")").c_str(), o.reps, "type", "M", "K", "N", "ms", "GFLOP/s",
        "x sgemm");
  for (int64_t M : o.m)
    for (int64_t K : o.k)
      for (int64_t N : o.n) {
        std::mt19937 rng(1);
        std::normal_distribution<float> dist(0.0f, 1.0f);
        std::vector<float> x(size_t(M * K)), w(size_t(N * K)), y(size_t(M * N));
        for (auto& v : x) v = dist(rng);
        for (auto& v : w) v = 0.02f * dist(rng);
        const double flops = 2.0 * double(M) * double(K) * double(N);
        // Index 0 is the sgemm baseline; the rows follow in --types order.
        std::vector<std::string> names{"f32-openblas"};
        names.insert(names.end(), o.types.begin(), o.types.end());
        std::vector<std::string> whys(names.size());
        std::vector<Status> statuses(names.size());
        std::vector<Run> runs(names.size());
        for (size_t i = 0; i < names.size(); ++i)
          if (i == 0 || names[i] != "f32-openblas")
            runs[i] = prepare(names[i], M, K, N, x, w, y, pool, &whys[i], &statuses[i]);
        const std::vector<double> times = time_interleaved(runs, o.reps);
        const double sgemm = times[0];
        for (size_t i = 1; i < names.size(); ++i) {
          const std::string& type = names[i];
          double t = type == "f32-openblas" ? sgemm : times[i];
          std::string why = type == "f32-openblas" ? whys[0] : whys[i];
          if (!statuses[i].is_ok()) t = -1, why = statuses[i].to_string();
          const double gflops = t > 0 ? flops / t * 1e-9 : 0.0;
          const double ratio = t > 0 && sgemm > 0 ? sgemm / t : 0.0;
          if (o.json) {
            rows.push_back({{"type", type},
                            {"M", M},
                            {"K", K},
                            {"N", N},
                            {"threads", threads},
                            {"seconds", t > 0 ? t : 0.0},
                            {"gflops", gflops},
                            {"vs_sgemm", ratio},
                            {"error", why}});
          } else if (t > 0) {
            std::printf("%-14s %6lld %6lld %6lld %10.2f %10.1f %9.2f\n", type.c_str(), (long long)M, (long long)K,
                        (long long)N, t * 1e3, gflops, ratio);
          } else {
            std::printf("%-14s %6lld %6lld %6lld  skipped: %s\n", type.c_str(), (long long)M, (long long)K,
                        (long long)N, why.c_str());
          }
        }
      }
  if (o.json) std::printf("%s\n", rows.dump(2).c_str());
  return kExitOk;
}

Runner setup(CLI::App& sub) {
  auto o = std::make_shared<Options>();
  sub.add_option("--m", o->m, "Rows of x (list)")->delimiter(',');
  sub.add_option("--k", o->k, "Input features (list)")->delimiter(',');
  sub.add_option("--n", o->n, "Output features (list)")->delimiter(',');
  sub.add_option(
         "--types", o->types,
         "f32-openblas, bf16-onednn, tq2-exact, tq2-a8, q8_0 (a8), q8_0-exact, bf16 (bf16 activations), f16 (fused "
         "panel kernel), f16-decode / bf16-decode (f32 panels + sgemm), f32-panel (f32 weights in the fused "
         "panel kernel)")
      ->delimiter(',');
  sub.add_option("--threads", o->threads, "Threads (default: QUILL_THREADS or all cores)");
  sub.add_option("--reps", o->reps, "Timed rounds, each running every type once (median reported)")
      ->capture_default_str();
  sub.add_flag("--json", o->json, "Print JSON instead of a table");
  return [o] { return run(*o); };
}

}  // namespace
QUILL_COMMAND(bench_gemm, "bench-gemm", "Linear GFLOP/s by weight type vs OpenBLAS sgemm and oneDNN bf16", setup);
}  // namespace quill::cli
