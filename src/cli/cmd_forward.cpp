// `quill forward`: one SD3 MMDiT forward on tensors from a safetensors file.
#include <chrono>
#include <cstdio>

#include "cli/command.h"
#include "core/log.h"
#include "core/memory_stats.h"
#include "core/thread_pool.h"
#include "io/safetensors.h"
#include "runtime/device_select.h"
#include "runtime/sd3_engine.h"

namespace quill::cli {
namespace {

struct Options {
  std::string model, inputs, output;
  int threads = 0;
  bool diag = false;
  bool json = false;
  int repeat = 1;
  std::string device = "auto";
};

// Reads a named float tensor as f32 and checks its shape; `want` uses -1 for "any".
Result<std::vector<float>> read_input(const SafetensorsFile& f, const std::string& name,
                                      const std::vector<int64_t>& want) {
  const TensorInfo* info = f.find(name);
  if (!info) {
    std::string have;
    for (const auto& t : f.tensors()) have += (have.empty() ? "" : ", ") + t.name;
    return invalid_argument("missing input tensor '", name,
                            "'; expected hidden_states [B,C,H,W], encoder_hidden_states [B,T,J], "
                            "pooled_projections [B,P], timestep [B]; file has: ",
                            have.empty() ? "(none)" : have)
        .with_file(f.path());
  }
  QUILL_ASSIGN_OR_RETURN(Tensor t, f.tensor(name));
  bool ok = t.rank() == int(want.size());
  for (int i = 0; ok && i < t.rank(); ++i) ok = want[size_t(i)] < 0 || want[size_t(i)] == t.dim(i);
  if (!ok) {
    std::string w = "[";
    for (size_t i = 0; i < want.size(); ++i)
      w += (i ? ", " : "") + (want[i] < 0 ? std::string("*") : std::to_string(want[i]));
    return invalid_argument("wrong shape")
        .with_tensor(name)
        .with_file(f.path())
        .with_expected_found(w + "]", t.shape().to_string());
  }
  if (!dtype_traits(t.dtype()).is_float)
    return invalid_argument("wrong dtype")
        .with_tensor(name)
        .with_file(f.path())
        .with_expected_found("f32, f16 or bf16", dtype_name(t.dtype()));
  std::vector<float> v = t.to_f32_vector();
  if (const int64_t i = first_non_finite(v.data(), int64_t(v.size())); i >= 0)
    return invalid_argument("non-finite value (NaN or Inf) at element ", i).with_tensor(name).with_file(f.path());
  return v;
}

int run(const Options& o) {
  ThreadPool::set_global_threads(o.threads > 0 ? o.threads : default_thread_count());
  ThreadPool& pool = ThreadPool::global();
  const auto t_load = std::chrono::steady_clock::now();
  auto engine_r = open_sd3_engine(o.model, pool);
  if (!engine_r) return report_error(engine_r.status());
  auto& engine = *engine_r.value();
  // The GPU (when built, present and allowed) runs what it supports; the CPU does the rest.
  auto choice = parse_device_choice(o.device);
  if (!choice) return report_error(choice.status());
  auto device = select_device(*choice);
  if (!device) return report_error(device.status());
  engine.set_primary_backend(device->gpu.get());
  const std::string device_line = device->description;
  const SD3Config& cfg = engine.model().config();
  auto in_r = SafetensorsFile::open(o.inputs);
  if (!in_r) return report_error(in_r.status());
  const SafetensorsFile& in = *in_r.value();

  auto hs = read_input(in, "hidden_states", {-1, cfg.in_channels, -1, -1});
  if (!hs) return report_error(hs.status());
  const Tensor hst = in.tensor("hidden_states").value();
  const int64_t B = hst.dim(0), H = hst.dim(2), W = hst.dim(3);
  auto ehs = read_input(in, "encoder_hidden_states", {B, -1, cfg.joint_attention_dim});
  if (!ehs) return report_error(ehs.status());
  const int64_t T = in.tensor("encoder_hidden_states").value().dim(1);
  auto pooled = read_input(in, "pooled_projections", {B, cfg.pooled_projection_dim});
  if (!pooled) return report_error(pooled.status());
  auto ts = read_input(in, "timestep", {B});
  if (!ts) return report_error(ts.status());
  const double load_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t_load).count();

  const SD3Bucket bucket{B, H, W, T};
  const auto t_plan = std::chrono::steady_clock::now();
  auto plan = engine.plan(bucket);
  if (!plan) return report_error(plan.status());
  const double plan_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t_plan).count();

  Tensor sample = Tensor::empty(DType::kF32, {B, cfg.out_channels, H, W});
  std::vector<double> times;
  for (int r = 0; r < std::max(1, o.repeat); ++r) {
    const auto t0 = std::chrono::steady_clock::now();
    Status st = engine.forward(bucket, hs->data(), ehs->data(), pooled->data(), ts->data(), sample.data_as<float>());
    if (!st) return report_error(st);
    times.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
  }
  if (const int64_t i = first_non_finite(sample.data_as<float>(), sample.numel()); i >= 0)
    return report_error(non_finite("the forward produced a non-finite value (NaN or Inf) at element ", i,
                                     " of 'sample'; nothing written")
                            .with_file(o.model));
  Status ws = write_safetensors(o.output, {{"sample", sample}});
  if (!ws) return report_error(ws);
  std::sort(times.begin(), times.end());
  if (o.json) {
    std::printf(
        "{\"bench\": \"quill_sd3_forward\", \"threads\": %d, \"runs\": %zu, \"median_s\": %.6f, \"min_s\": %.6f, "
        "\"plan_build_s\": %.6f, \"load_s\": %.6f, \"arena_bytes\": %zu, \"peak_rss_bytes\": %llu}\n",
        pool.num_threads(), times.size(), times[times.size() / 2] / 1e3, times.front() / 1e3, plan_ms / 1e3,
        load_ms / 1e3, plan.value()->arena_bytes, (unsigned long long)peak_rss_bytes());
    return kExitOk;
  }
  std::printf("model %s: %lld layers, dim %lld; bucket %s\n", o.model.c_str(), (long long)cfg.num_layers,
              (long long)cfg.inner_dim(), bucket.to_string().c_str());
  std::printf(
      "load %.1f ms, plan build (cold) %.1f ms, arena %.1f MiB, forward (warm) median %.1f ms over %zu run(s), threads "
      "%d, peak RSS %.1f MiB\n",
      load_ms, plan_ms, plan.value()->arena_bytes / (1024.0 * 1024.0), times[times.size() / 2], times.size(),
      pool.num_threads(), double(peak_rss_bytes()) / (1024.0 * 1024.0));
  std::printf("device: %s\n", device_line.c_str());
  std::printf("wrote %s (sample %s)\n", o.output.c_str(), sample.shape().to_string().c_str());
  if (o.diag) std::printf("transformer ops:\n%s", engine.ops().stats().to_string().c_str());
  return kExitOk;
}

Runner setup(CLI::App& sub) {
  auto o = std::make_shared<Options>();
  sub.add_option("--model", o->model, "SD3 transformer: diffusers folder, .safetensors or .gguf")->required();
  sub.add_option("--inputs", o->inputs,
                 "safetensors with hidden_states [B,C,H,W], encoder_hidden_states [B,T,J], pooled_projections [B,P], "
                 "timestep [B]")
      ->required();
  sub.add_option("--output,-o", o->output, "safetensors to write with 'sample' [B,Cout,H,W]")->required();
  sub.add_option("--threads", o->threads, "CPU threads (default: QUILL_THREADS or all cores)")
      ->check(CLI::Range(1, 1024));
  sub.add_option("--repeat", o->repeat, "Run the forward this many times and report the median")
      ->check(CLI::Range(1, 1000));
  sub.add_flag("--json", o->json, "Print the timings as one JSON line");
  sub.add_flag("--diag", o->diag, "Print how many ops of each kind ran on which device");
  sub.add_option("--device", o->device, "auto (GPU when available), gpu (required) or cpu")
      ->check(CLI::IsMember({"auto", "gpu", "cpu"}));
  return [o] { return run(*o); };
}

}  // namespace
QUILL_COMMAND(forward, "forward", "Run one SD3 MMDiT forward pass on tensors from a file", setup);
}  // namespace quill::cli
