// The op suite: every op kind, through the Dispatcher, on every backend present, compared to the
// CPU (the f32 reference; its kernels are tested against textbook versions in tests/backend/).
//   - the failing fake backend: the result is the CPU's bit for bit and one fallback is counted
//     per call (the per-op fallback is safe for every op);
//   - the working fake backend: the op is routed to the primary and counted on its device;
//   - CUDA, when this build has it and a device exists: within each case's bound (cosine >= 0.999
//     and a relative L2 error), the one place a CUDA op is compared to the CPU. An op CUDA does
//     not implement runs on the CPU and must then be exact.
// Adding an op means adding its cases here; OpSuite.CoversEveryOpKind fails until then.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <functional>
#include <set>

#include "runtime/gpu_backend.h"
#include "runtime/gpu_policy.h"
#include "support/fake_backend.h"
#include "support/test_util.h"
#include "support/tq2_reference.h"
#include "support/scoped_env.h"

namespace quill {
namespace {

using test::FakeFailingBackend;
using test::random_normal;

constexpr double kExact = 0.0;
constexpr double kF32Bound = 1e-5;            // f32 kernels; only the summation order differs
constexpr double kBf16LinearBound = 8e-3;     // x rounded to bf16 (and W, if it was not bf16)
constexpr double kBf16AttentionBound = 2e-2;  // q, k, v and P rounded to bf16

// One op call on fixed inputs. `run` calls the op through `ops` and appends every output (in-place
// buffers after the op) to `out`; it builds its inputs itself, so every run starts from the same.
struct OpCase {
  std::string name;
  OpKind kind;
  double gpu_bound;  // relative L2 bound for a real accelerator
  std::function<Status(Dispatcher& ops, ThreadPool& pool, std::vector<float>& out)> run;
};

void PrintTo(const OpCase& c, std::ostream* os) { *os << c.name; }

std::vector<float> nans(int64_t n) { return test::nan_filled(size_t(n)); }
void append(std::vector<float>& out, const std::vector<float>& v) { out.insert(out.end(), v.begin(), v.end()); }

std::vector<uint16_t> to_bits(const std::vector<float>& v, DType t) {
  std::vector<uint16_t> o(v.size());
  for (size_t i = 0; i < v.size(); ++i) o[i] = t == DType::kBF16 ? f32_to_bf16(v[i]) : f32_to_f16(v[i]);
  return o;
}

OpCase linear_case(int64_t M, int64_t K, int64_t N, DType wt, bool bias) {
  const double bound = kBf16LinearBound;
  return {str_cat("linear_", dtype_name(wt), "_M", M, "_K", K, "_N", N, bias ? "_bias" : ""), OpKind::kLinear, bound,
          [=](Dispatcher& ops, ThreadPool& pool, std::vector<float>& out) -> Status {
            const auto x = random_normal(size_t(M * K), 11);
            const auto w32 = random_normal(size_t(N * K), 12, 0.05f);
            const auto b = random_normal(size_t(N), 13);
            std::vector<uint16_t> w16;
            std::vector<uint8_t> wq;
            Tensor W;
            if (wt == DType::kF32) {
              W = Tensor(const_cast<float*>(w32.data()), DType::kF32, {N, K});
            } else if (wt == DType::kTQ2_0_G128) {
              wq = test::random_tq2(N, K, 21);
              W = Tensor(wq.data(), wt, {N, K});
            } else {
              w16 = to_bits(w32, wt);
              W = Tensor(w16.data(), wt, {N, K});
            }
            std::vector<float> scratch(op_linear_scratch_floats(W, pool) + 1);
            ops.set_scratch({scratch.data(), scratch.size(), nullptr, 0});
            auto y = nans(M * N);
            QUILL_RETURN_IF_ERROR(ops.linear(x.data(), M, W, bias ? b.data() : nullptr, y.data()));
            append(out, y);
            return Status::ok();
          }};
}

OpCase attention_case(int64_t B, int64_t Sq, int64_t Skv, int64_t H, int64_t Dh) {
  const double bound = (Dh == 64 || Dh == 128) ? kBf16AttentionBound : kF32Bound;
  return {str_cat("attention_B", B, "_Sq", Sq, "_Skv", Skv, "_H", H, "_Dh", Dh), OpKind::kAttention, bound,
          [=](Dispatcher& ops, ThreadPool& pool, std::vector<float>& out) -> Status {
            const auto q = random_normal(size_t(B * Sq * H * Dh), 31);
            const auto k = random_normal(size_t(B * Skv * H * Dh), 32);
            const auto v = random_normal(size_t(B * Skv * H * Dh), 33);
            std::vector<float> scratch(op_attention_scratch_floats(Skv, Dh, pool) + 1);
            ops.set_scratch({nullptr, 0, scratch.data(), scratch.size()});
            auto o = nans(int64_t(q.size()));
            QUILL_RETURN_IF_ERROR(
                ops.attention(q.data(), k.data(), v.data(), o.data(), B, Sq, Skv, H, Dh, 1.0f / std::sqrt(float(Dh))));
            append(out, o);
            return Status::ok();
          }};
}

// Rows with a large mean next to their spread (the case a two-part mean is for).
std::vector<float> offset_rows(int64_t n, uint32_t seed) {
  auto x = random_normal(size_t(n), seed, 2.0f);
  for (auto& e : x) e += 30.0f;
  return x;
}

std::vector<OpCase> norm_cases(int64_t B, int64_t S, int64_t D) {
  const int64_t rows = B * S, n = rows * D;
  const std::string sz = str_cat("_B", B, "_S", S, "_D", D);
  std::vector<OpCase> cs;
  cs.push_back({"layer_norm_affine" + sz, OpKind::kLayerNorm, kF32Bound, [=](Dispatcher& ops, ThreadPool&, auto& out) {
                  const auto x = offset_rows(n, 41), w = random_normal(size_t(D), 42), b = random_normal(size_t(D), 43);
                  auto y = nans(n);
                  QUILL_RETURN_IF_ERROR(ops.layer_norm(x.data(), y.data(), rows, D, 1e-6f, w.data(), b.data()));
                  append(out, y);
                  return Status::ok();
                }});
  cs.push_back({"layer_norm_plain" + sz, OpKind::kLayerNorm, kF32Bound, [=](Dispatcher& ops, ThreadPool&, auto& out) {
                  const auto x = offset_rows(n, 41);
                  auto y = nans(n);
                  QUILL_RETURN_IF_ERROR(ops.layer_norm(x.data(), y.data(), rows, D, 1e-5f, nullptr, nullptr));
                  append(out, y);
                  return Status::ok();
                }});
  cs.push_back(
      {"layer_norm_modulate" + sz, OpKind::kLayerNorm, kF32Bound, [=](Dispatcher& ops, ThreadPool&, auto& out) {
         const auto x = offset_rows(n, 41), mod = random_normal(size_t(B * 6 * D), 44, 0.5f);
         auto y = nans(n);
         QUILL_RETURN_IF_ERROR(ops.layer_norm_modulate(x.data(), y.data(), B, S, D, 1e-6f, mod.data() + 3 * D,
                                                       mod.data() + 4 * D, 6 * D));
         append(out, y);
         return Status::ok();
       }});
  cs.push_back({"rms_norm" + sz, OpKind::kRmsNorm, kF32Bound, [=](Dispatcher& ops, ThreadPool&, auto& out) {
                  const auto x = offset_rows(n, 41), w = random_normal(size_t(D), 42);
                  auto y = nans(n);
                  QUILL_RETURN_IF_ERROR(ops.rms_norm(x.data(), y.data(), rows, D, 1e-6f, w.data()));
                  append(out, y);
                  return Status::ok();
                }});
  cs.push_back({"rms_norm_in_place" + sz, OpKind::kRmsNorm, kF32Bound, [=](Dispatcher& ops, ThreadPool&, auto& out) {
                  auto x = offset_rows(n, 41);
                  QUILL_RETURN_IF_ERROR(ops.rms_norm(x.data(), x.data(), rows, D, 1e-6f, nullptr));
                  append(out, x);
                  return Status::ok();
                }});
  cs.push_back({"gated_residual" + sz, OpKind::kResidual, kF32Bound, [=](Dispatcher& ops, ThreadPool&, auto& out) {
                  auto x = offset_rows(n, 41);
                  const auto y = random_normal(size_t(n), 45), mod = random_normal(size_t(B * 6 * D), 44, 0.5f);
                  QUILL_RETURN_IF_ERROR(ops.gated_residual(x.data(), y.data(), mod.data() + 2 * D, B, S, D, 6 * D));
                  append(out, x);
                  return Status::ok();
                }});
  return cs;
}

// In-place unary activations over an odd length reaching both tails of exp.
OpCase unary_case(const std::string& name, OpKind kind, Status (Dispatcher::*op)(float*, int64_t)) {
  return {name, kind, kF32Bound, [=](Dispatcher& ops, ThreadPool&, std::vector<float>& out) {
            auto x = random_normal(100003, 51, 4.0f);
            x[0] = 0.0f;
            x[1] = -30.0f;
            x[2] = 30.0f;
            QUILL_RETURN_IF_ERROR((ops.*op)(x.data(), int64_t(x.size())));
            append(out, x);
            return Status::ok();
          }};
}

OpCase conv_case(const std::string& name, int64_t N, int64_t C, int64_t H, int64_t W, int64_t O, int64_t k,
                 int64_t stride, int64_t pt, int64_t pl, int64_t pb, int64_t pr) {
  return {name, OpKind::kConv2d, kF32Bound, [=](Dispatcher& ops, ThreadPool&, std::vector<float>& out) -> Status {
            auto w = random_normal(size_t(O * C * k * k), 61, 0.2f), b = random_normal(size_t(O), 62);
            const auto x = random_normal(size_t(N * C * H * W), 63);
            QUILL_ASSIGN_OR_RETURN(Conv2dWeights cw, Conv2dWeights::create(Tensor(w.data(), DType::kF32, {O, C, k, k}),
                                                                           Tensor(b.data(), DType::kF32, {O}), stride,
                                                                           pt, pl, pb, pr, "suite.conv"));
            auto y = nans(N * O * cw.out_h(H) * cw.out_w(W));
            QUILL_RETURN_IF_ERROR(ops.conv2d(x.data(), N, H, W, cw, y.data()));
            append(out, y);
            return Status::ok();
          }};
}

std::vector<OpCase> all_cases() {
  std::vector<OpCase> cs;
  for (auto c : {linear_case(37, 72, 50, DType::kBF16, true), linear_case(1, 256, 64, DType::kBF16, false),
                 linear_case(300, 1536, 1536, DType::kBF16, true), linear_case(37, 72, 50, DType::kF32, true),
                 linear_case(64, 384, 200, DType::kF16, true), linear_case(19, 69, 33, DType::kBF16, true),
                 linear_case(1, 128, 8, DType::kTQ2_0_G128, true), linear_case(37, 384, 200, DType::kTQ2_0_G128, true),
                 linear_case(129, 256, 131, DType::kTQ2_0_G128, false)})
    cs.push_back(c);
  for (auto c :
       {attention_case(2, 100, 333, 3, 64), attention_case(2, 100, 333, 3, 128), attention_case(1, 1024, 1024, 2, 64),
        attention_case(1, 64, 1, 1, 128), attention_case(1, 1, 70, 2, 64), attention_case(2, 37, 41, 4, 8),
        attention_case(1, 50, 77, 2, 40), attention_case(1, 20, 30, 1, 256)})
    cs.push_back(c);
  for (auto sz : {std::array<int64_t, 3>{2, 25, 24}, {2, 77, 1536}, {1, 3, 3072}, {3, 5, 64}})
    for (auto& c : norm_cases(sz[0], sz[1], sz[2])) cs.push_back(c);
  cs.push_back(unary_case("gelu_tanh", OpKind::kActivation, &Dispatcher::gelu_tanh));
  cs.push_back(unary_case("silu", OpKind::kActivation, &Dispatcher::silu));
  cs.push_back(unary_case("relu", OpKind::kActivation, &Dispatcher::relu));
  cs.push_back(unary_case("gelu_erf", OpKind::kGeluErf, &Dispatcher::gelu_erf));

  cs.push_back({"add_position_table", OpKind::kAdd, kF32Bound, [](Dispatcher& ops, ThreadPool&, auto& out) {
                  auto x = random_normal(3 * 17 * 40, 71);  // [B=3, S=17, D=40] + table [17, 40]
                  const auto t = random_normal(17 * 40, 72);
                  QUILL_RETURN_IF_ERROR(ops.add(x.data(), t.data(), 3 * 17, 40, 17));
                  append(out, x);
                  return Status::ok();
                }});
  cs.push_back({"add_plain", OpKind::kAdd, kF32Bound, [](Dispatcher& ops, ThreadPool&, auto& out) {
                  auto x = random_normal(5 * 40001, 73);
                  const auto y = random_normal(5 * 40001, 74);
                  QUILL_RETURN_IF_ERROR(ops.add(x.data(), y.data(), 5, 40001, 5));
                  append(out, x);
                  return Status::ok();
                }});
  cs.push_back({"swiglu_fused", OpKind::kSwiGLU, kF32Bound, [](Dispatcher& ops, ThreadPool&, auto& out) {
                  const auto gu = random_normal(13 * 2 * 24, 75, 3.0f);  // [M, 2F]: gate | up
                  auto o = nans(13 * 24);
                  QUILL_RETURN_IF_ERROR(ops.swiglu(gu.data(), gu.data() + 24, 48, o.data(), 13, 24));
                  append(out, o);
                  return Status::ok();
                }});
  cs.push_back({"rope", OpKind::kRope, kF32Bound, [](Dispatcher& ops, ThreadPool&, auto& out) {
                  auto x = random_normal(2 * 11 * 3 * 16, 76);  // [B=2, S=11, H=3, Dh=16]
                  std::vector<float> cs(11 * 8), sn(11 * 8);
                  for (size_t i = 0; i < cs.size(); ++i) {
                    cs[i] = std::cos(0.37f * float(i));
                    sn[i] = std::sin(0.37f * float(i));
                  }
                  QUILL_RETURN_IF_ERROR(ops.rope(x.data(), 2, 11, 3, 16, cs.data(), sn.data(), 8));
                  append(out, x);
                  return Status::ok();
                }});
  cs.push_back(conv_case("conv2d_3x3_pad1", 2, 5, 9, 11, 6, 3, 1, 1, 1, 1, 1));
  cs.push_back(conv_case("conv2d_3x3_stride2_pad_0101", 1, 4, 10, 7, 3, 3, 2, 0, 0, 1, 1));
  cs.push_back(conv_case("conv2d_1x1", 1, 8, 6, 5, 7, 1, 1, 0, 0, 0, 0));
  for (bool silu : {false, true})
    cs.push_back({silu ? "group_norm_silu_in_place" : "group_norm", OpKind::kGroupNorm, kF32Bound,
                  [silu](Dispatcher& ops, ThreadPool&, auto& out) {
                    auto x = offset_rows(2 * 8 * 30, 77);  // [N=2, C=8, HW=30], 4 groups
                    const auto g = random_normal(8, 78), b = random_normal(8, 79);
                    auto y = silu ? x : nans(int64_t(x.size()));
                    QUILL_RETURN_IF_ERROR(ops.group_norm(silu ? y.data() : x.data(), y.data(), 2, 8, 30, 4, 1e-6f,
                                                         g.data(), b.data(), silu));
                    append(out, y);
                    return Status::ok();
                  }});
  cs.push_back({"upsample_nearest2x", OpKind::kUpsample, kExact, [](Dispatcher& ops, ThreadPool&, auto& out) {
                  const auto x = random_normal(3 * 5 * 7, 80);
                  auto y = nans(3 * 10 * 14);
                  QUILL_RETURN_IF_ERROR(ops.upsample_nearest2x(x.data(), y.data(), 3, 5, 7));
                  append(out, y);
                  return Status::ok();
                }});
  cs.push_back({"spatial_attention", OpKind::kSpatialAttention, kF32Bound, [](Dispatcher& ops, ThreadPool&, auto& out) {
                  const int64_t C = 8, T = 300;
                  const auto q = random_normal(C * T, 81), k = random_normal(C * T, 82), v = random_normal(C * T, 83);
                  std::vector<float> scratch(op_spatial_attention_scratch_floats(T));
                  auto o = nans(C * T);
                  QUILL_RETURN_IF_ERROR(
                      ops.spatial_attention(q.data(), k.data(), v.data(), o.data(), C, T, 0.35f, scratch.data()));
                  append(out, o);
                  return Status::ok();
                }});
  cs.push_back({"rope_half", OpKind::kRopeHalf, kF32Bound, [](Dispatcher& ops, ThreadPool&, auto& out) {
                  const int64_t B = 2, S = 5, H = 3, Dh = 8;
                  auto x = random_normal(size_t(B * S * H * Dh), 88);
                  const auto c = random_normal(size_t(S * Dh / 2), 89), s = random_normal(size_t(S * Dh / 2), 90);
                  QUILL_RETURN_IF_ERROR(ops.rope_half(x.data(), B, S, H, Dh, c.data(), s.data()));
                  append(out, x);
                  return Status::ok();
                }});
  cs.push_back({"masked_attention_gqa_causal", OpKind::kMaskedAttention, kF32Bound,
                [](Dispatcher& ops, ThreadPool& pool, auto& out) {
                  const int64_t B = 2, S = 37, H = 4, Hkv = 2, Dh = 16;
                  const auto q = random_normal(size_t(B * S * H * Dh), 85);
                  const auto k = random_normal(size_t(B * S * Hkv * Dh), 86);
                  const auto v = random_normal(size_t(B * S * Hkv * Dh), 87);
                  const int32_t valid[B] = {37, 20};  // the second sequence right-padded
                  std::vector<float> scratch(op_masked_attention_scratch_floats(S, pool));
                  auto o = nans(B * S * H * Dh);
                  QUILL_RETURN_IF_ERROR(ops.masked_attention(q.data(), k.data(), v.data(), o.data(), B, S, H, Hkv, Dh,
                                                             0.25f, valid, true, scratch.data()));
                  append(out, o);
                  return Status::ok();
                }});
  cs.push_back({"resize_bicubic", OpKind::kResize, kF32Bound, [](Dispatcher& ops, ThreadPool&, auto& out) {
                  const auto x = random_normal(4 * 4 * 6, 84);  // [4, 4, C=6] -> [5, 7, 6]
                  auto y = nans(5 * 7 * 6);
                  QUILL_RETURN_IF_ERROR(ops.resize_bicubic(x.data(), 4, 4, 6, y.data(), 5, 7));
                  append(out, y);
                  return Status::ok();
                }});
  return cs;
}

const GpuPolicy kDefaultPolicy;

bool bit_equal(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

std::vector<float> run_on_cpu(const OpCase& c, ThreadPool& pool) {
  // The reference keeps f32 activations (ternary linears default to A8 on the CPU).
  const test::ScopedEnv exact("QUILL_TERNARY_MODE", "exact");
  auto cpu = make_cpu_backend(pool);
  Dispatcher ops(cpu.get());
  ops.set_policy(&kDefaultPolicy);
  std::vector<float> out;
  const Status st = c.run(ops, pool, out);
  EXPECT_TRUE(st.is_ok()) << st.to_string();
  EXPECT_EQ(ops.stats().runs_of(c.kind, Device::kCPU), 1u);
  return out;
}

class OpSuite : public ::testing::TestWithParam<OpCase> {};

TEST_P(OpSuite, CpuOutputIsComplete) {
  ThreadPool pool(2);
  const auto out = run_on_cpu(GetParam(), pool);
  ASSERT_FALSE(out.empty());
  size_t nonfinite = 0;
  for (float v : out) nonfinite += std::isfinite(v) ? 0 : 1;
  EXPECT_EQ(nonfinite, 0u) << "an output element was never written (outputs start as NaN)";
}

// Runs the case through a dispatcher whose primary is the fake backend (failing every op or none);
// the output must be the CPU's bit for bit either way.
OpStats run_on_fake(const OpCase& c, bool failing, FakeFailingBackend::Calls* calls) {
  const test::ScopedEnv exact("QUILL_TERNARY_MODE", "exact");  // the mode run_on_cpu uses
  ThreadPool pool(2);
  const auto want = run_on_cpu(c, pool);
  auto cpu = make_cpu_backend(pool);
  FakeFailingBackend fake(pool);
  if (failing) fake.fail_all();
  Dispatcher ops(cpu.get(), &fake);
  ops.set_policy(&kDefaultPolicy);
  std::vector<float> got;
  const Status st = c.run(ops, pool, got);
  EXPECT_TRUE(st.is_ok()) << st.to_string();
  EXPECT_TRUE(bit_equal(got, want));
  if (calls) *calls = fake.calls(c.kind);
  return ops.stats();
}

TEST_P(OpSuite, FailingBackendFallsBackToTheCpuBitExact) {
  const OpCase& c = GetParam();
  FakeFailingBackend::Calls calls = 0;
  const OpStats st = run_on_fake(c, /*failing=*/true, &calls);
  EXPECT_EQ(calls, 1u);
  EXPECT_EQ(st.fallbacks[size_t(c.kind)], 1u);
  EXPECT_EQ(st.runs_of(c.kind, Device::kCPU), 1u);
  EXPECT_EQ(st.total(Device::kCUDA), 0u);
}

TEST_P(OpSuite, WorkingPrimaryRunsTheOpAndCountsItsDevice) {
  const OpCase& c = GetParam();
  const OpStats st = run_on_fake(c, /*failing=*/false, nullptr);
  EXPECT_EQ(st.runs_of(c.kind, Device::kCUDA), 1u);
  EXPECT_EQ(st.total(Device::kCPU), 0u);
}

TEST_P(OpSuite, GpuMatchesCpu) {
  const OpCase& c = GetParam();
  static auto gpu = create_gpu_backend();
  if (!gpu.is_ok()) GTEST_SKIP() << gpu.status().to_string();
  ThreadPool pool(2);
  const auto want = run_on_cpu(c, pool);
  auto cpu = make_cpu_backend(pool);
  Dispatcher ops(cpu.get(), gpu.value().get());
  ops.set_policy(&kDefaultPolicy);
  std::vector<float> got;
  const Status st = c.run(ops, pool, got);
  ASSERT_TRUE(st.is_ok()) << st.to_string();
  EXPECT_EQ(ops.stats().fallbacks[size_t(c.kind)], 0u) << "the GPU op failed; see the warning above";
  ASSERT_EQ(got.size(), want.size());
  if (ops.stats().runs_of(c.kind, Device::kCUDA) == 0) {  // not a CUDA op: the CPU ran it
    EXPECT_TRUE(bit_equal(got, want));
    return;
  }
  double dot = 0, ng = 0, nw = 0, diff = 0;
  size_t nonfinite = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    if (!std::isfinite(got[i])) ++nonfinite;
    dot += double(got[i]) * want[i];
    ng += double(got[i]) * got[i];
    nw += double(want[i]) * want[i];
    diff += (double(got[i]) - want[i]) * (double(got[i]) - want[i]);
  }
  EXPECT_EQ(nonfinite, 0u);
  const double cosine = dot / std::sqrt(ng * nw + 1e-300), rel = std::sqrt(diff / (nw + 1e-300));
  EXPECT_GE(cosine, 0.999) << c.name;
  EXPECT_LE(rel, std::max(c.gpu_bound, 1e-7)) << c.name;
}

INSTANTIATE_TEST_SUITE_P(Ops, OpSuite, ::testing::ValuesIn(all_cases()),
                         [](const auto& info) { return info.param.name; });

TEST(OpSuiteCoverage, CoversEveryOpKind) {
  std::set<OpKind> seen;
  for (const auto& c : all_cases()) seen.insert(c.kind);
  for (size_t k = 0; k < size_t(OpKind::kCount); ++k)
    EXPECT_TRUE(seen.count(OpKind(k))) << "no op-suite case for " << op_kind_name(OpKind(k));
}

TEST(OpSuiteCoverage, EveryKindHasADistinctName) {
  std::set<std::string> names;
  for (size_t k = 0; k < size_t(OpKind::kCount); ++k) names.insert(op_kind_name(OpKind(k)));
  EXPECT_EQ(names.size(), size_t(OpKind::kCount));
  EXPECT_EQ(names.count("?"), 0u);
}

}  // namespace
}  // namespace quill
