// The Dispatcher's per-op fallback and the GPU policy, proven with a host-side failing backend:
// when the primary fails, the result is the CPU's bit for bit; fallbacks are counted per kind and
// warned about once; QUILL_GPU=0 bypasses the primary; QUILL_FAULT_INJECT forces the fallback.
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <map>

#include "backend/cpu/cpu_backend.h"
#include "core/log.h"
#include "io/safetensors.h"
#include "runtime/dispatcher.h"
#include "runtime/gpu_policy.h"
#include "runtime/sd3_engine.h"
#include "support/fake_backend.h"
#include "support/test_util.h"

namespace quill {
namespace {

using test::FakeFailingBackend;

GpuPolicy policy_from(const std::map<std::string, std::string>& env) {
  return GpuPolicy::parse([&](const char* name) -> const char* {
    auto it = env.find(name);
    return it == env.end() ? nullptr : it->second.c_str();
  });
}

// Small random inputs for every op, and the outputs of one pass of all of them through a dispatcher.
struct OpCase {
  static constexpr int64_t M = 7, K = 40, N = 24;                  // linear
  static constexpr int64_t B = 2, S = 9, Skv = 13, H = 3, Dh = 8;  // attention / norms
  static constexpr int64_t D = 24;

  std::vector<float> x = test::random_normal(M * K, 1);
  std::vector<float> w32 = test::random_normal(N * K, 2, 0.2f);
  std::vector<uint16_t> wbf = [this] {
    std::vector<uint16_t> v(w32.size());
    for (size_t i = 0; i < v.size(); ++i) v[i] = f32_to_bf16(w32[i]);
    return v;
  }();
  std::vector<float> bias = test::random_normal(N, 3);
  std::vector<float> q = test::random_normal(B * S * H * Dh, 4);
  std::vector<float> k = test::random_normal(B * Skv * H * Dh, 5);
  std::vector<float> v = test::random_normal(B * Skv * H * Dh, 6);
  std::vector<float> act = test::random_normal(B * S * D, 7, 2.0f);
  std::vector<float> mod = test::random_normal(B * 6 * D, 8, 0.5f);  // shift | scale | gate chunks
  std::vector<float> nw = test::random_normal(D, 9), nb = test::random_normal(D, 10);
  std::vector<float> other = test::random_normal(B * S * D, 11);

  Tensor W32() { return Tensor(w32.data(), DType::kF32, {N, K}); }
  Tensor Wbf() { return Tensor(wbf.data(), DType::kBF16, {N, K}); }

  // Runs every op once (in a fixed order) and returns all outputs, concatenated.
  std::vector<float> run_all(Dispatcher& ops, ThreadPool& pool) {
    const Tensor w32t = W32(), wbft = Wbf();
    std::vector<float> lin_scratch(
        std::max(op_linear_scratch_floats(w32t, pool), op_linear_scratch_floats(wbft, pool)) + 1);
    std::vector<float> att_scratch(op_attention_scratch_floats(Skv, Dh, pool) + 1);
    ops.set_scratch({lin_scratch.data(), lin_scratch.size(), att_scratch.data(), att_scratch.size()});

    std::vector<float> all;
    auto take = [&](const std::vector<float>& o) { all.insert(all.end(), o.begin(), o.end()); };
    std::vector<float> y(M * N);
    EXPECT_TRUE(ops.linear(x.data(), M, w32t, bias.data(), y.data()).is_ok());
    take(y);
    EXPECT_TRUE(ops.linear(x.data(), M, wbft, nullptr, y.data()).is_ok());
    take(y);
    std::vector<float> out(q.size());
    EXPECT_TRUE(ops.attention(q.data(), k.data(), v.data(), out.data(), B, S, Skv, H, Dh, 0.35f).is_ok());
    take(out);
    std::vector<float> n(act.size());
    EXPECT_TRUE(
        ops.layer_norm_modulate(act.data(), n.data(), B, S, D, 1e-6f, mod.data(), mod.data() + D, 6 * D).is_ok());
    take(n);
    EXPECT_TRUE(ops.layer_norm(act.data(), n.data(), B * S, D, 1e-5f, nw.data(), nb.data()).is_ok());
    take(n);
    EXPECT_TRUE(ops.rms_norm(act.data(), n.data(), B * S, D, 1e-6f, nw.data()).is_ok());
    take(n);
    std::vector<float> inplace = act;
    EXPECT_TRUE(ops.rms_norm(inplace.data(), inplace.data(), B * S, D, 1e-6f, nullptr).is_ok());
    take(inplace);
    inplace = act;
    EXPECT_TRUE(ops.gelu_tanh(inplace.data(), int64_t(inplace.size())).is_ok());
    take(inplace);
    inplace = act;
    EXPECT_TRUE(ops.silu(inplace.data(), int64_t(inplace.size())).is_ok());
    take(inplace);
    inplace = act;
    EXPECT_TRUE(ops.gated_residual(inplace.data(), other.data(), mod.data() + 2 * D, B, S, D, 6 * D).is_ok());
    take(inplace);
    return all;
  }
  // Calls per kind in run_all: linear 2, attention 1, layer norm 2, rms 2, activation 2, residual 1.
  // Other kinds are not in run_all (the op suite, op_suite_test.cpp, covers every kind).
  static uint64_t calls(OpKind k) {
    switch (k) {
      case OpKind::kAttention:
      case OpKind::kResidual:
        return 1;
      case OpKind::kLinear:
      case OpKind::kLayerNorm:
      case OpKind::kRmsNorm:
      case OpKind::kActivation:
        return 2;
      default:
        return 0;
    }
  }
};

bool bit_equal(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

// Log level at warn for the test's scope, restored after.
class LogLevelScope {
 public:
  explicit LogLevelScope(LogLevel l) : saved_(log_level()) { set_log_level(l); }
  ~LogLevelScope() { set_log_level(saved_); }

 private:
  LogLevel saved_;
};

size_t count_of(const std::string& haystack, const std::string& needle) {
  size_t n = 0;
  for (size_t p = haystack.find(needle); p != std::string::npos; p = haystack.find(needle, p + 1)) ++n;
  return n;
}

const GpuPolicy kDefaultPolicy;

TEST(Fallback, FailingPrimaryGivesTheCpuResultBitExact) {
  ThreadPool pool(2);
  OpCase c;
  CpuBackend cpu(pool);
  Dispatcher cpu_only(&cpu);
  cpu_only.set_policy(&kDefaultPolicy);
  const std::vector<float> want = c.run_all(cpu_only, pool);
  ASSERT_EQ(cpu_only.stats().total(Device::kCUDA), 0u);

  FakeFailingBackend fake(pool);
  fake.fail_all();
  Dispatcher ops(&cpu, &fake);
  ops.set_policy(&kDefaultPolicy);
  LogLevelScope quiet(LogLevel::kError);
  const std::vector<float> got = c.run_all(ops, pool);
  EXPECT_TRUE(bit_equal(got, want));
  for (size_t k = 0; k < size_t(OpKind::kCount); ++k) {
    const OpKind kind = OpKind(k);
    EXPECT_EQ(fake.calls(kind), OpCase::calls(kind)) << op_kind_name(kind);
    EXPECT_EQ(ops.stats().fallbacks[k], OpCase::calls(kind)) << op_kind_name(kind);
    EXPECT_EQ(ops.stats().runs[k][size_t(Device::kCPU)], OpCase::calls(kind)) << op_kind_name(kind);
    EXPECT_EQ(ops.stats().runs[k][size_t(Device::kCUDA)], 0u) << op_kind_name(kind);
  }
}

TEST(Fallback, WorkingPrimaryRunsEverythingAndCountsItsDevice) {
  ThreadPool pool(2);
  OpCase c;
  CpuBackend cpu(pool);
  Dispatcher cpu_only(&cpu);
  cpu_only.set_policy(&kDefaultPolicy);
  const std::vector<float> want = c.run_all(cpu_only, pool);

  FakeFailingBackend fake(pool);
  Dispatcher ops(&cpu, &fake);
  ops.set_policy(&kDefaultPolicy);
  EXPECT_TRUE(bit_equal(c.run_all(ops, pool), want));  // the fake computes with the CPU ops
  uint64_t total = 0;
  for (size_t k = 0; k < size_t(OpKind::kCount); ++k) {
    EXPECT_EQ(ops.stats().runs[k][size_t(Device::kCUDA)], OpCase::calls(OpKind(k)));
    EXPECT_EQ(ops.stats().runs[k][size_t(Device::kCPU)], 0u);
    EXPECT_EQ(ops.stats().fallbacks[k], 0u);
    total += OpCase::calls(OpKind(k));
  }
  EXPECT_EQ(ops.stats().total(Device::kCUDA), total);
  EXPECT_EQ(ops.stats().total(Device::kCPU), 0u);
  EXPECT_NE(ops.stats().to_string().find("linear: cpu=0 cuda=2 fallback=0"), std::string::npos)
      << ops.stats().to_string();
}

TEST(Fallback, CountsPerKindAndWarnsOncePerKind) {
  ThreadPool pool(1);
  OpCase c;
  CpuBackend cpu(pool);
  FakeFailingBackend fake(pool);
  fake.fail(OpKind::kLinear);
  fake.fail(OpKind::kRmsNorm);
  Dispatcher ops(&cpu, &fake);
  ops.set_policy(&kDefaultPolicy);

  LogLevelScope warn(LogLevel::kWarn);
  ::testing::internal::CaptureStderr();
  for (int i = 0; i < 3; ++i) c.run_all(ops, pool);
  const std::string log = ::testing::internal::GetCapturedStderr();

  const OpStats& st = ops.stats();
  EXPECT_EQ(st.fallbacks[size_t(OpKind::kLinear)], 6u);
  EXPECT_EQ(st.fallbacks[size_t(OpKind::kRmsNorm)], 6u);
  EXPECT_EQ(st.runs[size_t(OpKind::kLinear)][size_t(Device::kCPU)], 6u);
  EXPECT_EQ(st.runs[size_t(OpKind::kLinear)][size_t(Device::kCUDA)], 0u);
  EXPECT_EQ(st.runs[size_t(OpKind::kActivation)][size_t(Device::kCUDA)], 6u);
  EXPECT_EQ(st.fallbacks[size_t(OpKind::kActivation)], 0u);
  EXPECT_EQ(st.runs[size_t(OpKind::kAttention)][size_t(Device::kCUDA)], 3u);
  EXPECT_EQ(count_of(log, "fake-gpu linear failed"), 1u) << log;
  EXPECT_EQ(count_of(log, "fake-gpu rms_norm failed"), 1u) << log;
  EXPECT_EQ(count_of(log, "failed, using the CPU"), 2u) << log;
  EXPECT_NE(log.find("fake device error"), std::string::npos) << "the warning carries the backend's error: " << log;
}

TEST(Fallback, UnsupportedOpsGoToTheCpuWithoutCountingAFallback) {
  ThreadPool pool(1);
  OpCase c;
  CpuBackend cpu(pool);
  FakeFailingBackend fake(pool);
  fake.set_supported(OpKind::kAttention, false);
  Dispatcher ops(&cpu, &fake);
  ops.set_policy(&kDefaultPolicy);
  c.run_all(ops, pool);
  EXPECT_EQ(fake.calls(OpKind::kAttention), 0u);
  EXPECT_EQ(ops.stats().runs[size_t(OpKind::kAttention)][size_t(Device::kCPU)], 1u);
  EXPECT_EQ(ops.stats().fallbacks[size_t(OpKind::kAttention)], 0u);
  EXPECT_EQ(ops.stats().runs[size_t(OpKind::kLinear)][size_t(Device::kCUDA)], 2u);
}

TEST(Fallback, GpuOffPolicyBypassesThePrimary) {
  ThreadPool pool(1);
  OpCase c;
  CpuBackend cpu(pool);
  Dispatcher cpu_only(&cpu);
  cpu_only.set_policy(&kDefaultPolicy);
  const std::vector<float> want = c.run_all(cpu_only, pool);

  FakeFailingBackend fake(pool);
  const GpuPolicy off = policy_from({{"QUILL_GPU", "0"}});
  Dispatcher ops(&cpu, &fake);
  ops.set_policy(&off);
  EXPECT_TRUE(bit_equal(c.run_all(ops, pool), want));
  EXPECT_EQ(fake.total_calls(), 0u);
  EXPECT_EQ(ops.stats().total(Device::kCUDA), 0u);
  for (auto f : ops.stats().fallbacks) EXPECT_EQ(f, 0u);
}

TEST(Fallback, AttentionOffKeepsOnlyAttentionOnTheCpu) {
  ThreadPool pool(1);
  OpCase c;
  CpuBackend cpu(pool);
  FakeFailingBackend fake(pool);
  const GpuPolicy p = policy_from({{"QUILL_GPU_ATTN", "off"}});
  Dispatcher ops(&cpu, &fake);
  ops.set_policy(&p);
  c.run_all(ops, pool);
  EXPECT_EQ(fake.calls(OpKind::kAttention), 0u);
  EXPECT_EQ(ops.stats().runs[size_t(OpKind::kAttention)][size_t(Device::kCPU)], 1u);
  EXPECT_EQ(ops.stats().runs[size_t(OpKind::kLinear)][size_t(Device::kCUDA)], 2u);
}

TEST(Fallback, FaultInjectionForcesTheFallback) {
  ThreadPool pool(2);
  OpCase c;
  CpuBackend cpu(pool);
  Dispatcher cpu_only(&cpu);
  cpu_only.set_policy(&kDefaultPolicy);
  const std::vector<float> want = c.run_all(cpu_only, pool);

  FakeFailingBackend fake(pool);  // never fails by itself
  const GpuPolicy p = policy_from({{"QUILL_FAULT_INJECT", " attention,RMS_norm "}});
  Dispatcher ops(&cpu, &fake);
  ops.set_policy(&p);
  LogLevelScope warn(LogLevel::kWarn);
  ::testing::internal::CaptureStderr();
  EXPECT_TRUE(bit_equal(c.run_all(ops, pool), want));
  const std::string log = ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(fake.calls(OpKind::kAttention), 0u) << "an injected fault never reaches the primary";
  EXPECT_EQ(fake.calls(OpKind::kRmsNorm), 0u);
  EXPECT_EQ(ops.stats().fallbacks[size_t(OpKind::kAttention)], 1u);
  EXPECT_EQ(ops.stats().fallbacks[size_t(OpKind::kRmsNorm)], 2u);
  EXPECT_EQ(ops.stats().runs[size_t(OpKind::kRmsNorm)][size_t(Device::kCPU)], 2u);
  EXPECT_EQ(ops.stats().runs[size_t(OpKind::kLinear)][size_t(Device::kCUDA)], 2u);
  EXPECT_EQ(ops.stats().fallbacks[size_t(OpKind::kLinear)], 0u);
  EXPECT_NE(log.find("QUILL_FAULT_INJECT=attention"), std::string::npos) << log;
}

TEST(GpuPolicy, ParsesTogglesAndFaultLists) {
  const GpuPolicy d = policy_from({});
  EXPECT_TRUE(d.gpu && d.attention && d.ternary && d.cuda_graphs);
  for (auto f : d.fault_inject) EXPECT_FALSE(f);
  EXPECT_EQ(d.to_string(), "gpu=on attn=on ternary=on graphs=on fault_inject=none");

  for (const char* off : {"0", "off", "OFF", "false", "No", " 0 "}) EXPECT_FALSE(parse_toggle(off, true)) << off;
  for (const char* on : {"1", "on", "yes", "true", ""}) EXPECT_TRUE(parse_toggle(on, false)) << on;
  EXPECT_TRUE(parse_toggle(nullptr, true));
  EXPECT_FALSE(parse_toggle(nullptr, false));

  const GpuPolicy p = policy_from(
      {{"QUILL_GPU_TERNARY", "0"}, {"QUILL_CUDA_GRAPHS", "0"}, {"QUILL_FAULT_INJECT", "linear,,bogus, layer_norm"}});
  EXPECT_TRUE(p.gpu);
  EXPECT_FALSE(p.ternary);
  EXPECT_FALSE(p.cuda_graphs);
  EXPECT_TRUE(p.fault_injected(OpKind::kLinear));
  EXPECT_TRUE(p.fault_injected(OpKind::kLayerNorm));
  EXPECT_FALSE(p.fault_injected(OpKind::kAttention));
  ASSERT_EQ(p.unknown_fault_names.size(), 1u);
  EXPECT_EQ(p.unknown_fault_names[0], "bogus");

  const GpuPolicy all = policy_from({{"QUILL_FAULT_INJECT", "all"}});
  for (auto f : all.fault_inject) EXPECT_TRUE(f);
}

TEST(GpuPolicy, TernaryToggleGatesOnlyTernaryWeights) {
  uint8_t dummy[68] = {};
  const Tensor tq2(dummy, DType::kTQ2_0_G128, {2, 128});
  const Tensor bf16(dummy, DType::kBF16, {2, 16});
  const GpuPolicy p = policy_from({{"QUILL_GPU_TERNARY", "0"}});
  EXPECT_FALSE(p.allows(OpKind::kLinear, &tq2));
  EXPECT_TRUE(p.allows(OpKind::kLinear, &bf16));
  EXPECT_TRUE(p.allows(OpKind::kAttention, nullptr));
  EXPECT_TRUE(policy_from({}).allows(OpKind::kLinear, &tq2));
  const GpuPolicy off = policy_from({{"QUILL_GPU", "0"}});
  for (size_t k = 0; k < size_t(OpKind::kCount); ++k) EXPECT_FALSE(off.allows(OpKind(k), &bf16));
}

TEST(GpuPolicy, ReadsTheEnvironment) {
  ::setenv("QUILL_GPU_ATTN", "0", 1);
  ::setenv("QUILL_FAULT_INJECT", "silu_typo,residual", 1);
  const GpuPolicy p = GpuPolicy::from_environment();
  ::unsetenv("QUILL_GPU_ATTN");
  ::unsetenv("QUILL_FAULT_INJECT");
  EXPECT_FALSE(p.attention);
  EXPECT_TRUE(p.fault_injected(OpKind::kResidual));
  EXPECT_EQ(p.unknown_fault_names.size(), 1u);
}

// Whole model: the tiny SD3 fixture with a primary that fails linear and attention gives the
// CPU-only output bit for bit, and the diagnostics show which device ran what.
TEST(Fallback, WholeModelWithAFailingPrimaryMatchesCpuOnly) {
  const std::string dir = test::fixture("sd3/tiny");
  ThreadPool pool(2);
  auto in = SafetensorsFile::open(dir + "/inputs.safetensors");
  ASSERT_TRUE(in.is_ok()) << in.status().to_string();
  const Tensor hs = (*in)->tensor("hidden_states").value();
  const Tensor ehs = (*in)->tensor("encoder_hidden_states").value();
  const auto hsv = hs.to_f32_vector(), ehsv = ehs.to_f32_vector();
  const auto pv = (*in)->tensor("pooled_projections").value().to_f32_vector();
  const auto tv = (*in)->tensor("timestep").value().to_f32_vector();
  const SD3Bucket bucket{hs.dim(0), hs.dim(2), hs.dim(3), ehs.dim(1)};

  auto run = [&](OpBackend* primary, OpStats* stats) {
    auto engine = open_sd3_engine(dir, pool);
    EXPECT_TRUE(engine.is_ok()) << engine.status().to_string();
    (*engine)->ops().set_policy(&kDefaultPolicy);
    (*engine)->set_primary_backend(primary);
    std::vector<float> out(hsv.size() / size_t(hs.dim(1)) * size_t((*engine)->model().config().out_channels), NAN);
    Status st = (*engine)->forward(bucket, hsv.data(), ehsv.data(), pv.data(), tv.data(), out.data());
    EXPECT_TRUE(st.is_ok()) << st.to_string();
    *stats = (*engine)->ops().stats();
    return out;
  };
  OpStats cpu_stats, fake_stats;
  const std::vector<float> want = run(nullptr, &cpu_stats);
  FakeFailingBackend fake(pool);
  fake.fail(OpKind::kLinear);
  fake.fail(OpKind::kAttention);
  LogLevelScope quiet(LogLevel::kError);
  const std::vector<float> got = run(&fake, &fake_stats);
  EXPECT_TRUE(bit_equal(got, want));

  const size_t lin = size_t(OpKind::kLinear), att = size_t(OpKind::kAttention), ln = size_t(OpKind::kLayerNorm);
  EXPECT_GT(fake_stats.fallbacks[lin], 0u);
  EXPECT_EQ(fake_stats.fallbacks[lin], cpu_stats.runs[lin][0]);
  EXPECT_EQ(fake_stats.fallbacks[att], cpu_stats.runs[att][0]);
  EXPECT_EQ(fake_stats.runs[ln][size_t(Device::kCUDA)], cpu_stats.runs[ln][0]);
  EXPECT_EQ(fake_stats.runs[ln][size_t(Device::kCPU)], 0u);
  EXPECT_EQ(fake_stats.total(Device::kCUDA) + fake_stats.total(Device::kCPU), cpu_stats.total(Device::kCPU));
}

}  // namespace
}  // namespace quill
