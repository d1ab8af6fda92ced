// `quill bench-gemm`: GFLOP/s of linear (y = x W^T) by weight type (quant_linear's kernels, and with
// `-decode` the f32-panel + sgemm route the op layer gives f16 / bf16 weights), against OpenBLAS sgemm and
// oneDNN's bf16 matmul measured in the same run. Medians over --reps runs after one warm-up.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <random>
#include <string>
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
  std::vector<std::string> types{"f32-openblas", "bf16-onednn", "tq2-exact", "tq2-a8", "q8_0", "bf16", "f16", "f16-decode"};
  int threads = 0;
  int reps = 5;
  bool json = false;
};

double median_seconds(int reps, const std::function<void()>& fn) {
  fn();  // warm-up
  std::vector<double> t;
  for (int i = 0; i < reps; ++i) {
    const auto a = std::chrono::steady_clock::now();
    fn();
    t.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - a).count());
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

// Seconds for one run of `type`, or a negative value with `why` set when it cannot run here.
double time_type(const std::string& type, int64_t M, int64_t K, int64_t N, const std::vector<float>& x,
                 const std::vector<float>& w, std::vector<float>& y, ThreadPool& pool, int reps, std::string* why) {
  if (type == "f32-openblas") {
#if defined(QUILL_HAVE_OPENBLAS)
    openblas_set_num_threads(pool.num_threads());
    return median_seconds(reps, [&] {
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, int(M), int(N), int(K), 1.0f, x.data(), int(K), w.data(),
                  int(K), 0.0f, y.data(), int(N));
    });
#else
    *why = "built without OpenBLAS";
    return -1;
#endif
  }
  if (type == "bf16-onednn") {
#if defined(QUILL_HAVE_DNNL)
    using namespace dnnl;
    try {  // oneDNN throws where the CPU has no bf16 matmul (AVX2 without AVX512_BF16)
      engine eng(engine::kind::cpu, 0);
      stream st(eng);
      memory::desc a_md({M, K}, memory::data_type::bf16, memory::format_tag::ab);
      memory::desc b_md({K, N}, memory::data_type::bf16, memory::format_tag::ba);  // W [N, K] read as W^T
      memory::desc c_md({M, N}, memory::data_type::f32, memory::format_tag::ab);
      std::vector<uint16_t> xb(x.size()), wb(w.size());
      for (size_t i = 0; i < x.size(); ++i) xb[i] = f32_to_bf16(x[i]);
      for (size_t i = 0; i < w.size(); ++i) wb[i] = f32_to_bf16(w[i]);
      memory a_m(a_md, eng, xb.data()), b_m(b_md, eng, wb.data()), c_m(c_md, eng, y.data());
#if DNNL_VERSION_MAJOR >= 3
      matmul mm(matmul::primitive_desc(eng, a_md, b_md, c_md));
#else
      matmul mm(matmul::primitive_desc(matmul::desc(a_md, b_md, c_md), eng));
#endif
      return median_seconds(reps, [&] {
        mm.execute(st, {{DNNL_ARG_SRC, a_m}, {DNNL_ARG_WEIGHTS, b_m}, {DNNL_ARG_DST, c_m}});
        st.wait();
      });
    } catch (const dnnl::error& e) {
      *why = std::string("oneDNN: ") + e.what();
      return -1;
    }
#else
    *why = "built without oneDNN";
    return -1;
#endif
  }
  if (type == "f16-decode" || type == "bf16-decode") {  // cpu::linear: f32 panels decoded, then OpenBLAS sgemm
    auto q = quant::quantize_tensor(Tensor(const_cast<float*>(w.data()), DType::kF32, Shape{N, K}),
                                    type == "f16-decode" ? DType::kF16 : DType::kBF16);
    if (!q.is_ok()) {
      *why = q.status().to_string();
      return -1;
    }
    std::vector<float> scratch(cpu::linear_scratch_floats(*q, pool));
    return median_seconds(reps, [&] { cpu::linear(x.data(), M, *q, nullptr, y.data(), scratch.data(), pool); });
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
    return -1;
  }
  const Tensor w32(const_cast<float*>(w.data()), DType::kF32, Shape{N, K});
  auto q = dt == DType::kF32 ? Result<Tensor>(w32) : quant::quantize_tensor(w32, dt);
  if (!q.is_ok()) {
    *why = q.status().to_string();
    return -1;
  }
  std::vector<uint8_t> scratch(quant::quant_linear_scratch_bytes(M, *q, mode, pool));
  Status status;
  const double t = median_seconds(reps, [&] {
    status = quant::quant_linear(x.data(), M, *q, nullptr, nullptr, y.data(), scratch.data(), mode, pool);
  });
  if (!status.is_ok()) {
    *why = status.to_string();
    return -1;
  }
  return t;
}

int run(const Options& o) {
  const int threads = o.threads > 0 ? o.threads : default_thread_count();
  ThreadPool pool(threads);
  nlohmann::json rows = nlohmann::json::array();
  cpu::ensure_blas_core();  // before the first BLAS call, as the engine does
  const std::string blas = cpu::blas_core_name(), blas_switch = cpu::blas_core_switch();
  if (!o.json)
    std::printf("threads %d, isa %s, openblas core %s%s, reps %d (median)\n%-14s %6s %6s %6s %10s %10s %9s\n", threads,
                cpu_isa_name(cpu_isa()), blas.empty() ? "-" : blas.c_str(),
                blas_switch.empty() ? "" : (" (" + blas_switch + ")").c_str(), o.reps, "type", "M", "K", "N", "ms",
                "GFLOP/s", "x sgemm");
  for (int64_t M : o.m)
    for (int64_t K : o.k)
      for (int64_t N : o.n) {
        std::mt19937 rng(1);
        std::normal_distribution<float> dist(0.0f, 1.0f);
        std::vector<float> x(size_t(M * K)), w(size_t(N * K)), y(size_t(M * N));
        for (auto& v : x) v = dist(rng);
        for (auto& v : w) v = 0.02f * dist(rng);
        const double flops = 2.0 * double(M) * double(K) * double(N);
        std::string why;
        const double sgemm = time_type("f32-openblas", M, K, N, x, w, y, pool, o.reps, &why);
        for (const std::string& type : o.types) {
          why.clear();
          const double t = type == "f32-openblas" ? sgemm : time_type(type, M, K, N, x, w, y, pool, o.reps, &why);
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
  sub.add_option("--types", o->types,
                 "f32-openblas, bf16-onednn, tq2-exact, tq2-a8, q8_0 (a8), q8_0-exact, bf16 (bf16 activations), f16 (fused "
                 "panel kernel), f16-decode / bf16-decode (f32 panels + sgemm), f32-panel (f32 weights in the fused "
                 "panel kernel)")
      ->delimiter(',');
  sub.add_option("--threads", o->threads, "Threads (default: QUILL_THREADS or all cores)");
  sub.add_option("--reps", o->reps, "Timed runs per type (median reported)")->capture_default_str();
  sub.add_flag("--json", o->json, "Print JSON instead of a table");
  return [o] { return run(*o); };
}

}  // namespace
QUILL_COMMAND(bench_gemm, "bench-gemm", "Linear GFLOP/s by weight type vs OpenBLAS sgemm and oneDNN bf16", setup);
}  // namespace quill::cli
