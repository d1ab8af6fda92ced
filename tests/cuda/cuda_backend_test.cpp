// The CUDA backend as a whole: what happens without a device (runs on any machine), weight
// residency, the Dispatcher's counts with a real GPU, fault injection, and the tiny SD3 models
// run end to end on the GPU against the CPU.
#include <gtest/gtest.h>

#include <limits>
#include <map>

#include "backend/cpu/cpu_backend.h"
#include "core/log.h"
#include "cuda/cuda_test_util.h"
#include "io/safetensors.h"
#include "runtime/dispatcher.h"
#include "runtime/gpu_backend.h"
#include "runtime/gpu_policy.h"
#include "runtime/sd3_engine.h"

namespace quill {
namespace {

TEST(CudaBackendNoDevice, CreateSaysWhyAndTheEngineStaysOnTheCpu) {
  if (cuda::CudaBackend::device_count() > 0) GTEST_SKIP() << "a CUDA device is present";
  auto r = cuda::CudaBackend::create();
  ASSERT_FALSE(r.is_ok());
  EXPECT_EQ(r.status().code(), ErrorCode::kDevice) << r.status().to_string();
  EXPECT_NE(r.status().message().find("CPU"), std::string::npos) << r.status().to_string();
  EXPECT_TRUE(gpu_backend_compiled());
  auto g = create_gpu_backend();
  ASSERT_FALSE(g.is_ok());
  std::printf("    [no device] %s\n", g.status().to_string().c_str());
}

TEST(CudaBackend, DescribesItsDevice) {
  QUILL_REQUIRE_CUDA();
  auto& gpu = test::shared_cuda_backend();
  const std::string d = gpu.description();
  std::printf("    [device] %s\n", d.c_str());
  EXPECT_NE(d.find("sm_"), std::string::npos);
  EXPECT_EQ(gpu.device(), Device::kCUDA);
}

TEST(CudaBackend, UploadsEachWeightOnce) {
  QUILL_REQUIRE_CUDA();
  auto& gpu = test::shared_cuda_backend();
  const int64_t M = 8, K = 256, N = 96;
  const auto w = test::to_bf16(test::random_normal(size_t(N * K), 61));
  const auto x = test::random_normal(size_t(M * K), 62);
  auto wv = w;
  const Tensor W(wv.data(), DType::kBF16, {N, K});
  const int64_t before = gpu.weight_uploads();
  const size_t bytes_before = gpu.resident_weight_bytes();
  std::vector<float> y1(size_t(M * N)), y2(size_t(M * N));
  ASSERT_TRUE(gpu.linear(x.data(), M, W, nullptr, y1.data(), {}).is_ok());
  ASSERT_TRUE(gpu.linear(x.data(), M, W, nullptr, y2.data(), {}).is_ok());
  EXPECT_EQ(gpu.weight_uploads(), before + 1);
  EXPECT_GE(gpu.resident_weight_bytes(), bytes_before + size_t(N * K * 2));
  EXPECT_EQ(y1, y2);
  // Another weight at the same address (a freed model's memory reused) is not taken for the old one.
  for (auto& e : wv) e = f32_to_bf16(-bf16_to_f32(e));
  ASSERT_TRUE(gpu.linear(x.data(), M, W, nullptr, y2.data(), {}).is_ok());
  EXPECT_EQ(gpu.weight_uploads(), before + 2);
  for (size_t i = 0; i < y1.size(); ++i) ASSERT_EQ(y2[i], -y1[i]) << i;
  gpu.clear_weights();
  EXPECT_EQ(gpu.resident_weight_bytes(), 0u);
}

TEST(CudaBackend, UnsupportedWeightFailsCleanlyAndLeavesTheOutput) {
  QUILL_REQUIRE_CUDA();
  auto& gpu = test::shared_cuda_backend();
  std::vector<uint8_t> q8(size_t(4 * 34), 0);
  const Tensor W(q8.data(), DType::kQ8_0, {4, 32});
  EXPECT_FALSE(gpu.supports(OpKind::kLinear, &W));
  std::vector<float> x(32, 1.0f), y(4, 7.0f);
  const Status st = gpu.linear(x.data(), 1, W, nullptr, y.data(), {});
  EXPECT_FALSE(st.is_ok());
  EXPECT_EQ(y, std::vector<float>(4, 7.0f));
  // The backend still works afterwards.
  std::vector<float> a(10, 1.0f);
  EXPECT_TRUE(gpu.silu(a.data(), 10).is_ok());
}

TEST(CudaBackend, DispatcherCountsGpuRunsAndInjectedFaults) {
  QUILL_REQUIRE_CUDA();
  ThreadPool pool(2);
  CpuBackend cpu(pool);
  auto& gpu = test::shared_cuda_backend();
  const std::map<std::string, std::string> env = {{"QUILL_FAULT_INJECT", "attention"}};
  const GpuPolicy policy = GpuPolicy::parse([&](const char* n) -> const char* {
    auto it = env.find(n);
    return it == env.end() ? nullptr : it->second.c_str();
  });
  Dispatcher ops(&cpu, &gpu);
  ops.set_policy(&policy);
  const int64_t M = 16, K = 128, N = 64, S = 40, H = 2, Dh = 64;
  auto wv = test::to_bf16(test::random_normal(size_t(N * K), 71));
  const Tensor W(wv.data(), DType::kBF16, {N, K});
  auto scratch = test::cpu_scratch(&W, S, Dh, pool);
  ops.set_scratch(scratch.get());
  const auto x = test::random_normal(size_t(M * K), 72);
  std::vector<float> y(size_t(M * N));
  ASSERT_TRUE(ops.linear(x.data(), M, W, nullptr, y.data()).is_ok());
  const auto q = test::random_normal(size_t(S * H * Dh), 73);
  std::vector<float> out(q.size()), want(q.size());
  LogLevel saved = log_level();
  set_log_level(LogLevel::kError);
  ASSERT_TRUE(ops.attention(q.data(), q.data(), q.data(), out.data(), 1, S, S, H, Dh, 0.125f).is_ok());
  set_log_level(saved);
  ASSERT_TRUE(cpu.attention(q.data(), q.data(), q.data(), want.data(), 1, S, S, H, Dh, 0.125f, scratch.get()).is_ok());
  EXPECT_EQ(out, want) << "an injected fault gives the CPU's result";
  const OpStats& st = ops.stats();
  EXPECT_EQ(st.runs[size_t(OpKind::kLinear)][size_t(Device::kCUDA)], 1u);
  EXPECT_EQ(st.runs[size_t(OpKind::kAttention)][size_t(Device::kCPU)], 1u);
  EXPECT_EQ(st.fallbacks[size_t(OpKind::kAttention)], 1u);
  EXPECT_EQ(st.fallbacks[size_t(OpKind::kLinear)], 0u);
}

// Whole SD3 forward of a tiny fixture model with every op on the GPU, against the CPU engine.
class CudaSD3 : public ::testing::TestWithParam<const char*> {};

TEST_P(CudaSD3, ForwardMatchesCpu) {
  QUILL_REQUIRE_CUDA();
  const std::string dir = test::fixture(std::string("sd3/") + GetParam());
  ThreadPool pool(2);
  auto in = SafetensorsFile::open(dir + "/inputs.safetensors");
  ASSERT_TRUE(in.is_ok()) << in.status().to_string();
  const Tensor hs = (*in)->tensor("hidden_states").value();
  const Tensor ehs = (*in)->tensor("encoder_hidden_states").value();
  const auto hsv = hs.to_f32_vector(), ehsv = ehs.to_f32_vector();
  const auto pv = (*in)->tensor("pooled_projections").value().to_f32_vector();
  const auto tv = (*in)->tensor("timestep").value().to_f32_vector();
  const SD3Bucket bucket{hs.dim(0), hs.dim(2), hs.dim(3), ehs.dim(1)};
  const GpuPolicy all_on;

  auto run = [&](OpBackend* primary, OpStats* stats) {
    auto engine = open_sd3_engine(dir, pool);
    EXPECT_TRUE(engine.is_ok()) << engine.status().to_string();
    (*engine)->ops().set_policy(&all_on);
    (*engine)->set_primary_backend(primary);
    const size_t n = hsv.size() / size_t(hs.dim(1)) * size_t((*engine)->model().config().out_channels);
    std::vector<float> out(n, std::numeric_limits<float>::quiet_NaN());
    const Status st = (*engine)->forward(bucket, hsv.data(), ehsv.data(), pv.data(), tv.data(), out.data());
    EXPECT_TRUE(st.is_ok()) << st.to_string();
    *stats = (*engine)->ops().stats();
    return out;
  };
  OpStats cpu_stats, gpu_stats;
  const auto want = run(nullptr, &cpu_stats);
  const auto got = run(&test::shared_cuda_backend(), &gpu_stats);
  std::printf("    [ops]\n%s", gpu_stats.to_string().c_str());
  EXPECT_GPU_MATCHES_CPU(got, want, 2e-2);
  EXPECT_EQ(gpu_stats.total(Device::kCPU), 0u) << gpu_stats.to_string();
  EXPECT_EQ(gpu_stats.total(Device::kCUDA), cpu_stats.total(Device::kCPU));
  for (auto f : gpu_stats.fallbacks) EXPECT_EQ(f, 0u) << gpu_stats.to_string();
}

INSTANTIATE_TEST_SUITE_P(Fixtures, CudaSD3, ::testing::Values("tiny", "sd35", "bf16"));

}  // namespace
}  // namespace quill
