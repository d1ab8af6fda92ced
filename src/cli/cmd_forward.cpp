// `quill forward`: one transformer forward (SD3 MMDiT or FLUX.2, by the detected architecture) on
// tensors from a safetensors file, timed.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <functional>

#include "cli/command.h"
#include "core/log.h"
#include "core/memory_stats.h"
#include "core/thread_pool.h"
#include "io/architecture.h"
#include "io/safetensors.h"
#include "models/flux2_transformer.h"
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
                                      const std::vector<int64_t>& want, const char* expected_inputs) {
  const TensorInfo* info = f.find(name);
  if (!info) {
    std::string have;
    for (const auto& t : f.tensors()) have += (have.empty() ? "" : ", ") + t.name;
    return invalid_argument("missing input tensor '", name, "'; expected ", expected_inputs,
                            "; file has: ", have.empty() ? "(none)" : have)
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

// What a model's forward needs from the shared driver below.
struct ForwardJob {
  std::string describe;  // "model ...: N layers, dim D; bucket ..."
  Shape out_shape;
  std::function<Result<size_t>()> plan;  // builds the plan, returns its arena bytes
  std::function<Status(float* sample)> forward;
  std::function<std::string()> op_counts;
};

// Plans, runs `repeat` forwards, checks and writes 'sample', prints timings.
int drive(const Options& o, const ForwardJob& job, double load_ms, const std::string& device_line,
          const char* bench_name) {
  ThreadPool& pool = ThreadPool::global();
  const auto t_plan = std::chrono::steady_clock::now();
  auto arena = job.plan();
  if (!arena) return report_error(arena.status());
  const double plan_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t_plan).count();
  Tensor sample = Tensor::empty(DType::kF32, job.out_shape);
  std::vector<double> times;
  for (int r = 0; r < std::max(1, o.repeat); ++r) {
    const auto t0 = std::chrono::steady_clock::now();
    if (Status st = job.forward(sample.data_as<float>()); !st) return report_error(st);
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
        "{\"bench\": \"%s\", \"threads\": %d, \"runs\": %zu, \"median_s\": %.6f, \"min_s\": %.6f, "
        "\"plan_build_s\": %.6f, \"load_s\": %.6f, \"arena_bytes\": %zu, \"peak_rss_bytes\": %llu}\n",
        bench_name, pool.num_threads(), times.size(), times[times.size() / 2] / 1e3, times.front() / 1e3,
        plan_ms / 1e3, load_ms / 1e3, *arena, (unsigned long long)peak_rss_bytes());
    return kExitOk;
  }
  std::printf("%s\n", job.describe.c_str());
  std::printf(
      "load %.1f ms, plan build (cold) %.1f ms, arena %.1f MiB, forward (warm) median %.1f ms over %zu run(s), threads "
      "%d, peak RSS %.1f MiB\n",
      load_ms, plan_ms, double(*arena) / (1024.0 * 1024.0), times[times.size() / 2], times.size(), pool.num_threads(),
      double(peak_rss_bytes()) / (1024.0 * 1024.0));
  std::printf("device: %s\n", device_line.c_str());
  std::printf("wrote %s (sample %s)\n", o.output.c_str(), sample.shape().to_string().c_str());
  if (o.diag) std::printf("transformer ops:\n%s", job.op_counts().c_str());
  return kExitOk;
}

template <typename Engine>
Result<std::string> attach_device(const Options& o, Engine& engine, DeviceSelection* keep) {
  // The GPU (when built, present and allowed) runs what it supports; the CPU does the rest.
  QUILL_ASSIGN_OR_RETURN(DeviceChoice choice, parse_device_choice(o.device));
  QUILL_ASSIGN_OR_RETURN(*keep, select_device(choice));
  engine.set_primary_backend(keep->gpu.get());
  return keep->description;
}

int run_sd3(const Options& o) {
  ThreadPool& pool = ThreadPool::global();
  const auto t_load = std::chrono::steady_clock::now();
  auto engine_r = open_sd3_engine(o.model, pool);
  if (!engine_r) return report_error(engine_r.status());
  auto& engine = *engine_r.value();
  DeviceSelection device;
  auto device_line = attach_device(o, engine, &device);
  if (!device_line) return report_error(device_line.status());
  const SD3Config& cfg = engine.model().config();
  auto in_r = SafetensorsFile::open(o.inputs);
  if (!in_r) return report_error(in_r.status());
  const SafetensorsFile& in = *in_r.value();
  const char* expect = "hidden_states [B,C,H,W], encoder_hidden_states [B,T,J], pooled_projections [B,P], timestep [B]";
  auto hs = read_input(in, "hidden_states", {-1, cfg.in_channels, -1, -1}, expect);
  if (!hs) return report_error(hs.status());
  const Tensor hst = in.tensor("hidden_states").value();
  const int64_t B = hst.dim(0), H = hst.dim(2), W = hst.dim(3);
  auto ehs = read_input(in, "encoder_hidden_states", {B, -1, cfg.joint_attention_dim}, expect);
  if (!ehs) return report_error(ehs.status());
  const int64_t T = in.tensor("encoder_hidden_states").value().dim(1);
  auto pooled = read_input(in, "pooled_projections", {B, cfg.pooled_projection_dim}, expect);
  if (!pooled) return report_error(pooled.status());
  auto ts = read_input(in, "timestep", {B}, expect);
  if (!ts) return report_error(ts.status());
  const double load_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t_load).count();
  const SD3Bucket bucket{B, H, W, T};
  ForwardJob job;
  job.describe = str_cat("model ", o.model, ": ", cfg.num_layers, " layers, dim ", cfg.inner_dim(), "; bucket ",
                         bucket.to_string());
  job.out_shape = Shape{B, cfg.out_channels, H, W};
  job.plan = [&]() -> Result<size_t> {
    QUILL_ASSIGN_OR_RETURN(auto plan, engine.plan(bucket));
    return plan->arena_bytes;
  };
  job.forward = [&](float* sample) {
    return engine.forward(bucket, hs->data(), ehs->data(), pooled->data(), ts->data(), sample);
  };
  job.op_counts = [&] { return engine.ops().stats().to_string(); };
  return drive(o, job, load_ms, *device_line, "quill_sd3_forward");
}

int run_flux2(const Options& o) {
  ThreadPool& pool = ThreadPool::global();
  const auto t_load = std::chrono::steady_clock::now();
  auto engine_r = open_engine<Flux2Transformer>(o.model, pool);
  if (!engine_r) return report_error(engine_r.status());
  auto& engine = *engine_r.value();
  DeviceSelection device;
  auto device_line = attach_device(o, engine, &device);
  if (!device_line) return report_error(device_line.status());
  const Flux2Config& cfg = engine.model().config();
  auto in_r = SafetensorsFile::open(o.inputs);
  if (!in_r) return report_error(in_r.status());
  const SafetensorsFile& in = *in_r.value();
  const char* expect =
      "hidden_states [B,N,C], encoder_hidden_states [B,T,J], timestep [B] (sigmas), img_ids [N,4], txt_ids [T,4], "
      "guidance [B] (models with guidance embeddings)";
  auto hs = read_input(in, "hidden_states", {-1, -1, cfg.in_channels}, expect);
  if (!hs) return report_error(hs.status());
  const Tensor hst = in.tensor("hidden_states").value();
  const int64_t B = hst.dim(0), N = hst.dim(1);
  auto ehs = read_input(in, "encoder_hidden_states", {B, -1, cfg.joint_attention_dim}, expect);
  if (!ehs) return report_error(ehs.status());
  const int64_t T = in.tensor("encoder_hidden_states").value().dim(1);
  auto ts = read_input(in, "timestep", {B}, expect);
  if (!ts) return report_error(ts.status());
  // Ids may carry more columns than the model has RoPE axes; like diffusers, only the first are used.
  auto ids = [&](const char* name, int64_t rows) -> Result<std::vector<float>> {
    const TensorInfo* info = in.find(name);
    const int64_t cols = info && info->shape.rank() == 2 ? std::max(info->shape[1], cfg.id_axes()) : cfg.id_axes();
    QUILL_ASSIGN_OR_RETURN(std::vector<float> v, read_input(in, name, {rows, cols}, expect));
    std::vector<float> out(size_t(rows * cfg.id_axes()));
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t a = 0; a < cfg.id_axes(); ++a) out[size_t(r * cfg.id_axes() + a)] = v[size_t(r * cols + a)];
    return out;
  };
  auto img_ids = ids("img_ids", N);
  if (!img_ids) return report_error(img_ids.status());
  auto txt_ids = ids("txt_ids", T);
  if (!txt_ids) return report_error(txt_ids.status());
  std::vector<float> guidance;
  if (cfg.guidance_embeds) {
    auto g = read_input(in, "guidance", {B}, expect);
    if (!g) return report_error(g.status());
    guidance = std::move(*g);
  }
  const double load_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t_load).count();
  const Flux2Bucket bucket{B, N, T};
  const Flux2Inputs inputs{hs->data(),      ehs->data(),     ts->data(), guidance.empty() ? nullptr : guidance.data(),
                           img_ids->data(), txt_ids->data()};
  ForwardJob job;
  job.describe = str_cat("model ", o.model, ": ", cfg.num_layers, " double + ", cfg.num_single_layers,
                         " single blocks, dim ", cfg.inner_dim(), "; bucket ", bucket.to_string());
  job.out_shape = Shape{B, N, cfg.patch_size * cfg.patch_size * cfg.out_channels};
  job.plan = [&]() -> Result<size_t> {
    QUILL_ASSIGN_OR_RETURN(auto plan, engine.plan(bucket));
    return plan->arena_bytes;
  };
  job.forward = [&](float* sample) { return engine.forward(bucket, inputs, sample); };
  job.op_counts = [&] { return engine.ops().stats().to_string(); };
  return drive(o, job, load_ms, *device_line, "quill_flux2_forward");
}

int run(const Options& o) {
  ThreadPool::set_global_threads(o.threads > 0 ? o.threads : default_thread_count());
  auto files = ModelFiles::open(o.model);
  if (!files) return report_error(files.status());
  const ArchitectureGuess arch = detect_architecture(**files);
  if (arch.name == "Flux2Transformer2DModel") return run_flux2(o);
  if (arch.name == "SD3Transformer2DModel") return run_sd3(o);
  return report_error(unsupported("quill forward runs SD3Transformer2DModel and Flux2Transformer2DModel; this model "
                                  "is '",
                                  arch.name, "' (from ", arch.source, ")")
                          .with_file(o.model));
}

Runner setup(CLI::App& sub) {
  auto o = std::make_shared<Options>();
  sub.add_option("--model", o->model, "SD3 or FLUX.2 transformer: diffusers folder, .safetensors or .gguf")
      ->required();
  sub.add_option("--inputs", o->inputs,
                 "safetensors with the forward's inputs: SD3 hidden_states [B,C,H,W], encoder_hidden_states [B,T,J], "
                 "pooled_projections [B,P], timestep [B]; FLUX.2 hidden_states [B,N,C], encoder_hidden_states "
                 "[B,T,J], timestep [B] (sigmas), img_ids [N,4], txt_ids [T,4] (+ guidance [B])")
      ->required();
  sub.add_option("--output,-o", o->output,
                 "safetensors to write with 'sample' (SD3 [B,Cout,H,W], FLUX.2 [B,N,Cout])")->required();
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
QUILL_COMMAND(forward, "forward", "Run one SD3 or FLUX.2 transformer forward pass on tensors from a file", setup);
}  // namespace quill::cli
