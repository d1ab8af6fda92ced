// quant_linear on every ISA level vs the scalar reference, and the exact modes vs an f32 GEMM of
// the dequantized weights.
#include "quant/quant_linear.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <initializer_list>
#include <string>
#include <vector>

#include "../backend/op_test_util.h"
#include "quant/formats.h"

namespace quill::quant {
namespace {

using test::nan_filled;
using test::random_normal;
using testing_ops::testable_isas;

struct Weight {
  Tensor t;
  std::vector<float> scale;  // fp8 only
  std::vector<float> deq;    // exactly dequantized [N, K]
};

Weight make_weight(DType dt, int64_t N, int64_t K, uint32_t seed) {
  std::vector<float> w = random_normal(size_t(N * K), seed, 0.05f, 0.0f);
  Weight out;
  Tensor f(w.data(), DType::kF32, Shape{N, K});
  if (dt == DType::kF8E4M3) {
    out.t = Tensor::empty(dt, Shape{N, K});
    out.scale.resize(size_t(N));
    EXPECT_TRUE(quantize_fp8_e4m3_rows(w.data(), N, K, out.t.data_as<uint8_t>(), out.scale.data()).is_ok());
    out.deq.resize(size_t(N * K));
    EXPECT_TRUE(dequantize_fp8_e4m3_rows(out.t.data_as<uint8_t>(), out.scale.data(), N, K, out.deq.data()).is_ok());
    return out;
  }
  if (dt == DType::kF32) {  // quant_linear's panel kernel on plain f32 weights (bench-gemm's f32-panel)
    out.t = Tensor::empty(dt, Shape{N, K});
    std::memcpy(out.t.data(), w.data(), w.size() * sizeof(float));
    out.deq = w;
    return out;
  }
  auto q = quantize_tensor(f, dt);
  EXPECT_TRUE(q.is_ok());
  out.t = *q;
  auto d = dequantize_tensor(out.t);
  out.deq.assign(d->data_as<float>(), d->data_as<float>() + N * K);
  return out;
}

std::vector<float> gemm_ref(const std::vector<float>& x, const std::vector<float>& w, const std::vector<float>& b,
                            int64_t M, int64_t N, int64_t K) {
  std::vector<float> y(size_t(M * N));
  for (int64_t m = 0; m < M; ++m)
    for (int64_t n = 0; n < N; ++n) {
      double s = b[size_t(n)];
      for (int64_t k = 0; k < K; ++k) s += double(x[size_t(m * K + k)]) * w[size_t(n * K + k)];
      y[size_t(m * N + n)] = float(s);
    }
  return y;
}

double rel_err(const std::vector<float>& a, const std::vector<float>& ref) {
  double num = 0, den = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    if (!std::isfinite(a[i])) return INFINITY;
    num = std::max(num, std::fabs(double(a[i]) - ref[i]));
    den = std::max(den, std::fabs(double(ref[i])));
  }
  return num / std::max(den, 1e-30);
}

std::vector<float> run(const cpu::KernelTable& kernels, const std::vector<float>& x, int64_t M, const Weight& w,
                       const std::vector<float>& bias, QuantMode mode, ThreadPool& pool) {
  const testing_ops::IsaScope scope(kernels);
  const int64_t N = w.t.dim(0);
  std::vector<uint8_t> scratch(quant_linear_scratch_bytes(M, w.t, mode, pool));
  std::vector<float> y = nan_filled(size_t(M * N));
  Status st = quant_linear(x.data(), M, w.t, w.scale.empty() ? nullptr : w.scale.data(), bias.data(), y.data(),
                           scratch.data(), mode, pool);
  EXPECT_TRUE(st.is_ok()) << st.to_string();
  return y;
}

// Each of `rows` of x (rows K long), run alone, gives the same bits as it did in `batch`, the run
// of all of x: an output row depends on its own input row only.
void expect_rows_as_alone(const cpu::KernelTable& table, const std::vector<float>& x, int64_t K,
                          const std::vector<float>& batch, const Weight& w, const std::vector<float>& bias,
                          QuantMode mode, ThreadPool& pool, std::initializer_list<int64_t> rows,
                          const std::string& what) {
  const int64_t N = w.t.dim(0);
  for (int64_t r : rows) {
    const std::vector<float> row(x.begin() + r * K, x.begin() + (r + 1) * K);
    const std::vector<float> alone = run(table, row, 1, w, bias, mode, pool);
    EXPECT_EQ(0, std::memcmp(alone.data(), &batch[size_t(r * N)], size_t(N) * sizeof(float)))
        << what << ": row " << r << " alone differs from the same row in its batch";
  }
}

struct Case {
  DType dtype;
  QuantMode mode;
  double vs_exact;  // bound vs the f32 GEMM of the dequantized weights
};

// A8: int8 activations (absmax/127 per row) on N(0,1) inputs, 128..1536-long dots: ~1% of max|y|.
const Case kCases[] = {
    {DType::kTQ2_0_G128, QuantMode::kExact, 1e-5}, {DType::kTQ2_0_G128, QuantMode::kA8, 2e-2},
    {DType::kQ8_0, QuantMode::kExact, 1e-5},       {DType::kQ8_0, QuantMode::kA8, 2e-2},
    {DType::kBF16, QuantMode::kExact, 1e-5},       {DType::kBF16, QuantMode::kA8, 1e-2},
    {DType::kF16, QuantMode::kExact, 1e-5},        {DType::kF8E4M3, QuantMode::kExact, 1e-5},
    {DType::kF32, QuantMode::kExact, 1e-5},
};

void check_shape(ThreadPool& pool, int64_t M, int64_t K, int64_t N) {
  const std::vector<float> x = random_normal(size_t(M * K), uint32_t(M * 131 + K * 7 + N));
  const std::vector<float> bias = random_normal(size_t(N), uint32_t(N + 5));
  for (const Case& c : kCases) {
    const Weight w = make_weight(c.dtype, N, K, uint32_t(K * 3 + N));
    const std::vector<float> ref = gemm_ref(x, w.deq, bias, M, N, K);
    const std::vector<float> scalar = run(cpu::kernel_table_for(CpuIsa::kScalar), x, M, w, bias, c.mode, pool);
    const std::string what = std::string(dtype_name(c.dtype)) + " " + quant_mode_name(c.mode) +
                             " M=" + std::to_string(M) + " K=" + std::to_string(K) + " N=" + std::to_string(N);
    EXPECT_LE(rel_err(scalar, ref), c.vs_exact) << what << " scalar vs f32 gemm";
    for (CpuIsa isa : testable_isas()) {
      if (isa == CpuIsa::kScalar) continue;
      const std::vector<float> y = run(cpu::kernel_table_for(isa), x, M, w, bias, c.mode, pool);
      EXPECT_LE(rel_err(y, ref), c.vs_exact) << what << " " << cpu_isa_name(isa) << " vs f32 gemm";
      EXPECT_LE(rel_err(y, scalar), c.mode == QuantMode::kExact ? 1e-5 : 1e-4)
          << what << " " << cpu_isa_name(isa) << " vs scalar";
    }
  }
}

TEST(QuantLinear, EveryIsaMatchesTheReference) {
  ThreadPool pool(2);
  for (int64_t M : {1, 7, 8, 9, 100})
    for (int64_t K : {128, 384})
      for (int64_t N : {1, 17, 64}) check_shape(pool, M, K, N);
}

// The AMX tile kernels for tq2_0_g128. A8 against the AVX-512 VNNI kernel on the same sub-panels:
// the group sums are exact integers in both, scaled and accumulated in the same order -> same
// bits. Exact (bf16x3 split) against the AVX-512 exact kernel (int8 digits on VNNI) and an f64
// reference.
TEST(QuantLinear, AmxMatchesVnniBitForBit) {
  if (!cpu_features().amx_int8 || cpu_hardware_isa() != CpuIsa::kAvx512) GTEST_SKIP() << "no AMX-INT8 here";
  const cpu::KernelTable& with_amx = cpu::kernel_table_for(CpuIsa::kAvx512, true);
  const cpu::KernelTable& without = cpu::kernel_table_for(CpuIsa::kAvx512, false);
  if (!with_amx.amx) GTEST_SKIP() << "the OS did not grant AMX tile state";
  ThreadPool pool(2);
  for (int64_t M : {1, 15, 16, 17, 100, 600})
    for (int64_t K : {128, 1152})
      for (int64_t N : {1, 33, 96}) {
        const std::vector<float> x = random_normal(size_t(M * K), uint32_t(M + K + N));
        const std::vector<float> bias = random_normal(size_t(N), 3);
        const Weight w = make_weight(DType::kTQ2_0_G128, N, K, uint32_t(K + N));
        const std::vector<float> amx = run(with_amx, x, M, w, bias, QuantMode::kA8, pool);
        const std::vector<float> vnni = run(without, x, M, w, bias, QuantMode::kA8, pool);
        ASSERT_EQ(amx.size(), vnni.size());
        EXPECT_EQ(std::memcmp(amx.data(), vnni.data(), amx.size() * sizeof(float)), 0)
            << "M=" << M << " K=" << K << " N=" << N << " rel " << rel_err(amx, vnni);
        // Exact mode: bf16x3 activation split on AMX-BF16 vs the int8-digit VNNI kernel.
        if (!cpu_features().amx_bf16) continue;
        const std::vector<float> amx_exact = run(with_amx, x, M, w, bias, QuantMode::kExact, pool);
        const std::vector<float> fma_exact = run(without, x, M, w, bias, QuantMode::kExact, pool);
        const std::vector<float> ref = gemm_ref(x, w.deq, bias, M, N, K);
        EXPECT_LE(rel_err(amx_exact, fma_exact), 2e-6) << "exact M=" << M << " K=" << K << " N=" << N;
        EXPECT_LE(rel_err(amx_exact, ref), 2e-6) << "exact vs f64 M=" << M << " K=" << K << " N=" << N;
      }
}

// Exact ternary without AMX: activations as 22-bit integers per 128-group (a power-of-two scale
// s = 2^(floor(log2 max|x_g|) - 21)), int8 digits on VNNI, exact integer group sums. Each x is off
// by at most s/2, so |y - ref| <= sum_g s_g / 2 * d_g * #{k in g: w != 0} + f32 rounding of the
// group terms. Checked per element against that bound on activations with outliers (x1000 every
// 97th), a row near the bottom of f32's range and a zero row; on plain N(0, 1) activations, to
// the AMX exact kernel's 2e-6 (max error / max |y|).
TEST(QuantLinear, ExactTernaryOnVnniMeetsItsBound) {
  const cpu::KernelTable& avx512 = cpu::kernel_table_for(CpuIsa::kAvx512, false);
  if (cpu_hardware_isa() != CpuIsa::kAvx512 ||
      avx512.quant.plan[size_t(DType::kTQ2_0_G128)][size_t(QuantMode::kExact)].kind != detail::PanelKind::kI8x3)
    GTEST_SKIP() << "no AVX-512 VNNI here";
  ThreadPool pool(2);
  constexpr int64_t G = kTq2BlockSize;
  // K = 2176: 17 groups (two k blocks of 1024 and a tail where blocks are 1024); N = 47: a partly
  // filled second sub-panel.
  for (int64_t M : {1, 4, 100, 257})
    for (int64_t K : {128, 1152, 2176, 3072})
      for (int64_t N : {1, 33, 47, 96}) {
        const std::string what = "M=" + std::to_string(M) + " K=" + std::to_string(K) + " N=" + std::to_string(N);
        const std::vector<float> bias = random_normal(size_t(N), 4);
        const Weight w = make_weight(DType::kTQ2_0_G128, N, K, uint32_t(K * 5 + N));
        std::vector<float> x = random_normal(size_t(M * K), uint32_t(M * 7 + K + N));
        // max error / max |y| is a matrix-level measure; on a single output it is that dot
        // product's relative error, which cancellation can make large (the bound below covers it).
        if (M * N >= 32) {
          EXPECT_LE(rel_err(run(avx512, x, M, w, bias, QuantMode::kExact, pool), gemm_ref(x, w.deq, bias, M, N, K)),
                    2e-6)
              << what << " N(0, 1)";
        }
        for (size_t i = 0; i < x.size(); i += 97) x[i] *= 1000.0f;
        if (M > 2)
          for (int64_t k = 0; k < K; ++k) {
            x[size_t(K + k)] *= 1e-36f;   // row 1: values down to subnormal
            x[size_t(2 * K + k)] = 0.0f;  // row 2: zeros
          }
        const std::vector<float> y = run(avx512, x, M, w, bias, QuantMode::kExact, pool);
        const std::vector<float> ref = gemm_ref(x, w.deq, bias, M, N, K);
        int bad = 0;
        for (int64_t m = 0; m < M; ++m)
          for (int64_t n = 0; n < N; ++n) {
            double bound = 0, mag = std::fabs(bias[size_t(n)]);
            for (int64_t g = 0; g < K / G; ++g) {
              float gmax = 0;
              for (int64_t k = g * G; k < (g + 1) * G; ++k) gmax = std::max(gmax, std::fabs(x[size_t(m * K + k)]));
              const double s = gmax > 0 ? std::ldexp(1.0, std::max(std::ilogb(gmax), -105) - 21) : 0.0;
              for (int64_t k = g * G; k < (g + 1) * G; ++k) {
                const double wk = std::fabs(w.deq[size_t(n * K + k)]);
                bound += s / 2 * wk;
                mag += std::fabs(x[size_t(m * K + k)]) * wk;
              }
            }
            bound += 1e-6 * mag;
            const double err = std::fabs(double(y[size_t(m * N + n)]) - ref[size_t(m * N + n)]);
            if (!(err <= bound) && ++bad <= 3)
              ADD_FAILURE() << what << " y[" << m << "," << n << "]: error " << err << " over the bound " << bound;
          }
      }
}

// The digit split at its edges: rows whose largest element rounds up to X = 2^22 (the top digit
// at 64), groups near FLT_MAX (e = 127), rows of -0: against f64 within 2e-6 of max |y| per row.
TEST(QuantLinear, ExactTernaryOnVnniAtTheEdgesOfTheSplit) {
  const cpu::KernelTable& avx512 = cpu::kernel_table_for(CpuIsa::kAvx512, false);
  if (cpu_hardware_isa() != CpuIsa::kAvx512) GTEST_SKIP() << "no AVX-512 here";
  ThreadPool pool(1);
  const int64_t M = 3, K = 256, N = 40;
  std::vector<float> x = random_normal(size_t(M * K), 12);
  for (int64_t k = 0; k < K; ++k) {
    x[size_t(k)] = (k % 2 ? -1.0f : 1.0f) * std::nextafter(2.0f, 0.0f);  // 1.99999988: X rounds to 2^22
    x[size_t(K + k)] *= 1e37f;                                           // e up to 127
    x[size_t(2 * K + k)] = -0.0f;
  }
  const Weight w = make_weight(DType::kTQ2_0_G128, N, K, 13);
  const std::vector<float> bias(size_t(N), 0.0f);
  const std::vector<float> y = run(avx512, x, M, w, bias, QuantMode::kExact, pool);
  const std::vector<float> ref = gemm_ref(x, w.deq, bias, M, N, K);
  for (int64_t m = 0; m < M; ++m) {
    const std::vector<float> yr(y.begin() + m * N, y.begin() + (m + 1) * N);
    const std::vector<float> rr(ref.begin() + m * N, ref.begin() + (m + 1) * N);
    if (m == 2) {
      for (float v : yr) EXPECT_EQ(v, 0.0f);
    } else {
      EXPECT_LE(rel_err(yr, rr), 2e-6) << "row " << m;
    }
  }
}

TEST(QuantLinear, ExactTernaryOnVnniPropagatesNanAndInf) {
  const cpu::KernelTable& avx512 = cpu::kernel_table_for(CpuIsa::kAvx512, false);
  if (cpu_hardware_isa() != CpuIsa::kAvx512) GTEST_SKIP() << "no AVX-512 here";
  ThreadPool pool(1);
  const int64_t M = 4, K = 256, N = 40;
  std::vector<float> x = random_normal(size_t(M * K), 8);
  x[size_t(1 * K + 200)] = std::nanf("");
  x[size_t(3 * K + 5)] = INFINITY;
  const Weight w = make_weight(DType::kTQ2_0_G128, N, K, 9);
  const std::vector<float> bias(size_t(N), 0.0f);
  const std::vector<float> y = run(avx512, x, M, w, bias, QuantMode::kExact, pool);
  const std::vector<float> ref = gemm_ref(x, w.deq, bias, M, N, K);
  for (int64_t m = 0; m < M; ++m)
    for (int64_t n = 0; n < N; ++n) {
      const float v = y[size_t(m * N + n)];
      if (m == 0 || m == 2)
        EXPECT_NEAR(v, ref[size_t(m * N + n)], 1e-5) << m << "," << n;
      else
        EXPECT_FALSE(std::isfinite(v)) << "row " << m << " col " << n << " should not be finite, got " << v;
    }
}

// bf16 A8 goes to oneDNN, which keeps a reordered copy of each weight. A weight without an owner
// (lifetime unknown, e.g. a view over a caller's buffer) must not be served from that cache: new
// values at the same address must give new results.
TEST(QuantLinear, OwnerlessBf16WeightIsNotServedStale) {
  ThreadPool pool(2);
  const int64_t M = 4, K = 64, N = 32;
  const std::vector<float> x = random_normal(size_t(M * K), 21);
  std::vector<uint16_t> wb(size_t(N * K));
  std::vector<float> wf = random_normal(size_t(N * K), 22, 0.1f);
  Tensor W(wb.data(), DType::kBF16, Shape{N, K});  // no owner
  std::vector<uint8_t> scratch(quant_linear_scratch_bytes(M, W, QuantMode::kA8, pool));
  for (int round = 0; round < 2; ++round) {
    for (size_t i = 0; i < wf.size(); ++i) wb[i] = f32_to_bf16(round ? -wf[i] : wf[i]);
    std::vector<float> deq(wf.size()), y = nan_filled(size_t(M * N));
    for (size_t i = 0; i < wf.size(); ++i) deq[i] = bf16_to_f32(wb[i]);
    ASSERT_TRUE(quant_linear(x.data(), M, W, nullptr, nullptr, y.data(), scratch.data(), QuantMode::kA8, pool).is_ok());
    EXPECT_LE(rel_err(y, gemm_ref(x, deq, std::vector<float>(size_t(N), 0.0f), M, N, K)), 1e-2) << "round " << round;
  }
}

// f16 / bf16 weights with K not a multiple of the 16-wide vector decode.
TEST(QuantLinear, HalfWeightsWithRaggedK) {
  ThreadPool pool(2);
  for (DType dt : {DType::kF16, DType::kBF16, DType::kF32})
    for (int64_t K : {69, 130, 2176}) {
      const int64_t M = 13, N = 37;
      const Weight w = make_weight(dt, N, K, uint32_t(K + 1));
      const std::vector<float> x = random_normal(size_t(M * K), uint32_t(K + 2));
      const std::vector<float> bias = random_normal(size_t(N), 3);
      const std::vector<float> ref = gemm_ref(x, w.deq, bias, M, N, K);
      for (CpuIsa isa : testable_isas()) {
        EXPECT_LE(rel_err(run(cpu::kernel_table_for(isa), x, M, w, bias, QuantMode::kExact, pool), ref), 1e-5)
            << dtype_name(dt) << " K=" << K << " " << cpu_isa_name(isa);
        if (dt == DType::kBF16 && K % 2 == 0) {  // bf16 activations: K / 2 pairs, not a multiple of 16 at 130
          const std::vector<float> a8 = run(cpu::kernel_table_for(isa), x, M, w, bias, QuantMode::kA8, pool);
          EXPECT_LE(rel_err(a8, ref), 1e-2) << "bf16 a8 K=" << K << " " << cpu_isa_name(isa);
          EXPECT_LE(rel_err(a8, run(cpu::kernel_table_for(CpuIsa::kScalar), x, M, w, bias, QuantMode::kA8, pool)), 1e-5)
              << "bf16 a8 K=" << K << " " << cpu_isa_name(isa) << " vs scalar";
        }
      }
    }
}

// A pass budget for the test's span (detail::set_pass_bytes_for_tests), restored on scope exit.
struct PassBytes {
  explicit PassBytes(size_t bytes) { detail::set_pass_bytes_for_tests(bytes); }
  ~PassBytes() { detail::set_pass_bytes_for_tests(0); }
};

// Exact f32-activation kernels that pack x into row slabs do so a pass at a time (a byte budget of
// slabs, at least 512 rows rounded up to whole slabs: 516 rows for slabs of 12 (AVX-512) and of 6
// (AVX2)): with 8 MB passes at K = 16384 a batch of 1100 rows takes three, the last one partly
// filled. Each row must match the reference and equal the same row run alone.
TEST(QuantLinear, ExactRowsSpanningSeveralPasses) {
  ThreadPool pool(2);
  const PassBytes budget(size_t(8) << 20);
  const int64_t M = 1100, K = 16384, N = 21;
  const std::vector<float> x = random_normal(size_t(M * K), 21);
  const std::vector<float> bias = random_normal(size_t(N), 22);
  for (DType dt : {DType::kF16, DType::kQ8_0}) {
    const Weight w = make_weight(dt, N, K, 23);
    const std::vector<float> ref = gemm_ref(x, w.deq, bias, M, N, K);
    for (CpuIsa isa : testable_isas()) {
      const auto& table = cpu::kernel_table_for(isa);
      const std::vector<float> all = run(table, x, M, w, bias, QuantMode::kExact, pool);
      EXPECT_LE(rel_err(all, ref), 1e-5) << dtype_name(dt) << " " << cpu_isa_name(isa);
      expect_rows_as_alone(table, x, K, all, w, bias, QuantMode::kExact, pool, {0, 515, 516, 1031, 1032, 1099},
                           std::string(dtype_name(dt)) + " " + cpu_isa_name(isa));
    }
  }
}

// bf16 weights with bf16 activations take passes of at least 512 rows within the byte budget: a
// 1 MB budget at K = 2048 gives the floor, so 1100 rows take passes of 516, 516 and 68 where the
// kernel reads slabs of 12 rows (AVX-512), 512, 512 and 76 elsewhere. Rows on both sides of either
// set of pass edges equal the same row run alone, and all rows the scalar bf16-activation reference.
TEST(QuantLinear, Bf16ActivationRowsSpanningSeveralPasses) {
  ThreadPool pool(2);
  const PassBytes budget(size_t(1) << 20);
  const int64_t M = 1100, K = 2048, N = 37;
  const std::vector<float> x = random_normal(size_t(M * K), 31);
  const std::vector<float> bias = random_normal(size_t(N), 32);
  const Weight w = make_weight(DType::kBF16, N, K, 33);
  const std::vector<float> scalar = run(cpu::kernel_table_for(CpuIsa::kScalar), x, M, w, bias, QuantMode::kA8, pool);
  EXPECT_LE(rel_err(scalar, gemm_ref(x, w.deq, bias, M, N, K)), 1e-2);
  for (CpuIsa isa : testable_isas()) {
    const auto& table = cpu::kernel_table_for(isa);
    const std::vector<float> all = run(table, x, M, w, bias, QuantMode::kA8, pool);
    EXPECT_LE(rel_err(all, scalar), 1e-5) << cpu_isa_name(isa);
    expect_rows_as_alone(table, x, K, all, w, bias, QuantMode::kA8, pool,
                         {0, 511, 512, 515, 516, 1023, 1024, 1031, 1032, 1099}, cpu_isa_name(isa));
  }
}

// A row's output does not depend on the rows beside it: alone, or at any place in a bigger batch,
// it is the same bits (each output is one dot in a fixed k order, and A8 scales are per row). The
// line studio relies on this for quantized weights: a line served in a shared batch equals the
// line made alone. (OpenBLAS's sgemm, behind f32 weights, does not promise it.)
TEST(QuantLinear, ARowsOutputDoesNotDependOnItsBatch) {
  ThreadPool pool(2);
  const int64_t K = 392, N = 45, M = 29;  // K: a vector tail; M: full and partial row tiles
  const std::vector<float> x = random_normal(size_t(M * K), 11);
  const std::vector<float> bias = random_normal(size_t(N), 12);
  const std::pair<DType, QuantMode> cases[] = {
      {DType::kF32, QuantMode::kExact},  {DType::kF16, QuantMode::kExact},        {DType::kBF16, QuantMode::kExact},
      {DType::kQ8_0, QuantMode::kExact}, {DType::kTQ2_0_G128, QuantMode::kExact}, {DType::kTQ2_0_G128, QuantMode::kA8},
      {DType::kQ8_0, QuantMode::kA8}};
  for (const auto& [dt, mode] : cases) {
    const int64_t k = dtype_traits(dt).block_size > 1 ? 384 : K;  // whole blocks for q8_0 and tq2
    std::vector<float> xk(size_t(M * k));
    for (int64_t m = 0; m < M; ++m) std::memcpy(&xk[size_t(m * k)], &x[size_t(m * K)], size_t(k) * sizeof(float));
    const Weight w = make_weight(dt, N, k, 13);
    for (CpuIsa isa : testable_isas()) {
      const auto& table = cpu::kernel_table_for(isa);
      const std::vector<float> all = run(table, xk, M, w, bias, mode, pool);
      expect_rows_as_alone(table, xk, k, all, w, bias, mode, pool, {0, 5, 6, M - 1},
                           std::string(dtype_name(dt)) + " " + quant_mode_name(mode) + " " + cpu_isa_name(isa));
    }
  }
}

// Most non-AMX kernel sets take K as one k block; the tiles still accept several (the AMX sets and
// the exact VNNI set use them): the same product split into blocks of 256 or 1024 gives the same
// bits, since each output is summed in the same k order and only passes through y between blocks.
// Covers the first / last handling (zeroing, the bias, the A8 correction) that one block never
// exercises, on every level's own kernels and, where the CPU has AMX, on the AMX tables too
// (cases oneDNN runs are skipped: they never reach the panel driver).
TEST(QuantLinear, KBlocksGiveTheSameBitsAsOneBlock) {
  struct KBlock {
    explicit KBlock(int64_t kc) { detail::set_k_block_for_tests(kc); }
    ~KBlock() { detail::set_k_block_for_tests(0); }
  };
  ThreadPool pool(2);
  const int64_t M = 13, K = 2176, N = 47;  // K: 17 groups; N: a partly filled second sub-panel
  const std::vector<float> x = random_normal(size_t(M * K), 31);
  const std::vector<float> bias = random_normal(size_t(N), 32);
  std::vector<std::pair<const cpu::KernelTable*, std::string>> tables;
  for (CpuIsa isa : testable_isas()) {
    if (isa == CpuIsa::kScalar) continue;
    tables.emplace_back(&cpu::kernel_table_for(isa, false), cpu_isa_name(isa));
    if (isa == CpuIsa::kAvx512 && cpu_features().amx_int8)
      tables.emplace_back(&cpu::kernel_table_for(isa, true), std::string(cpu_isa_name(isa)) + "+amx");
  }
  for (const Case& c : kCases) {
    const Weight w = make_weight(c.dtype, N, K, 33);
    for (const auto& [table, level] : tables) {
      const cpu::KernelTable& t = *table;
      if (t.quant.plan[size_t(c.dtype)][size_t(c.mode)].onednn) continue;
      const std::vector<float> whole = run(t, x, M, w, bias, c.mode, pool);
      EXPECT_LE(rel_err(whole, gemm_ref(x, w.deq, bias, M, N, K)), c.vs_exact)
          << dtype_name(c.dtype) << " " << quant_mode_name(c.mode) << " " << level;
      for (int64_t kc : {256, 1024}) {
        const KBlock blocks(kc);
        EXPECT_EQ(0, std::memcmp(run(t, x, M, w, bias, c.mode, pool).data(), whole.data(), whole.size() * 4))
            << dtype_name(c.dtype) << " " << quant_mode_name(c.mode) << " " << level << ": k blocks of " << kc
            << " differ from one block";
      }
    }
  }
}

// tq2 A8 at every SIMD level (VPMADDUBSW on AVX2, VNNI on AVX-512) over K of 17 and 24 groups,
// partly filled sub-panels and row remainders, against the scalar A8 reference: the int8 images
// are the same bits (checked first), the group sums exact integers, only f32 order differs.
TEST(QuantLinear, TernaryA8MatchesTheScalarA8OnEverySimdLevel) {
  ThreadPool pool(2);
  const cpu::KernelTable& scalar = cpu::kernel_table_for(CpuIsa::kScalar);
  for (CpuIsa isa : testable_isas()) {
    if (isa == CpuIsa::kScalar) continue;
    const cpu::KernelTable& t = cpu::kernel_table_for(isa);
    ASSERT_NE(t.quant.plan[size_t(DType::kTQ2_0_G128)][size_t(QuantMode::kA8)].kernels, nullptr) << cpu_isa_name(isa);
    for (int64_t K : {77, 1000, 4099}) {  // the int8 prep, vector body and scalar tail
      const std::vector<float> x = random_normal(size_t(3 * K), uint32_t(K));
      std::vector<uint8_t> a(size_t(3 * K)), b(size_t(3 * K));
      std::vector<float> sa(3), sb(3);
      scalar.quant.prep_i8_rows(x.data(), 3, K, a.data(), sa.data());
      t.quant.prep_i8_rows(x.data(), 3, K, b.data(), sb.data());
      EXPECT_EQ(a, b) << cpu_isa_name(isa) << " K=" << K;
      EXPECT_EQ(sa, sb) << cpu_isa_name(isa) << " K=" << K;
    }
    for (int64_t M : {1, 2, 3, 4, 100})
      for (int64_t K : {2176, 3072})
        for (int64_t N : {1, 17, 47}) {
          const Weight w = make_weight(DType::kTQ2_0_G128, N, K, uint32_t(K + N));
          const std::vector<float> x = random_normal(size_t(M * K), uint32_t(M * 3 + K + N));
          const std::vector<float> bias = random_normal(size_t(N), 5);
          const std::vector<float> ref = run(scalar, x, M, w, bias, QuantMode::kA8, pool);
          EXPECT_LE(rel_err(run(t, x, M, w, bias, QuantMode::kA8, pool), ref), 1e-5)
              << cpu_isa_name(isa) << " M=" << M << " K=" << K << " N=" << N;
        }
  }
}

// A8 rows holding NaN or Inf have no int8 image: their outputs are NaN on every level (not a
// finite line made of clamped codes), and the other rows are untouched.
TEST(QuantLinear, A8RowsWithNanOrInfGiveNan) {
  ThreadPool pool(2);
  const int64_t M = 4, K = 256, N = 40;
  std::vector<float> x = random_normal(size_t(M * K), 21);
  x[size_t(K + 7)] = NAN;
  x[size_t(2 * K + 200)] = INFINITY;
  x[size_t(3 * K + 255)] = -INFINITY;
  const std::vector<float> bias = random_normal(size_t(N), 2);
  for (DType dt : {DType::kTQ2_0_G128, DType::kQ8_0}) {
    const Weight w = make_weight(dt, N, K, 4);
    const std::vector<float> clean(x.begin(), x.begin() + K);
    for (CpuIsa isa : testable_isas()) {
      const cpu::KernelTable& t = cpu::kernel_table_for(isa);
      const std::vector<float> y = run(t, x, M, w, bias, QuantMode::kA8, pool);
      const std::vector<float> y0 = run(t, clean, 1, w, bias, QuantMode::kA8, pool);
      for (int64_t n = 0; n < N; ++n) {
        EXPECT_EQ(y[size_t(n)], y0[size_t(n)]) << dtype_name(dt) << " " << cpu_isa_name(isa) << " n=" << n;
        for (int64_t m = 1; m < M; ++m)
          EXPECT_TRUE(std::isnan(y[size_t(m * N + n)])) << dtype_name(dt) << " " << cpu_isa_name(isa) << " row " << m
                                                        << " n=" << n << ": " << y[size_t(m * N + n)];
      }
    }
  }
}

TEST(QuantLinear, LargeCase) {
  ThreadPool pool(2);
  check_shape(pool, 1000, 1536, 64);
}

TEST(QuantLinear, ScratchIsBoundedBeyondTheChunk) {
  ThreadPool pool(2);
  const Weight w = make_weight(DType::kTQ2_0_G128, 64, 256, 3);
  EXPECT_EQ(quant_linear_scratch_bytes(kQuantMChunk, w.t, QuantMode::kA8, pool),
            quant_linear_scratch_bytes(10 * kQuantMChunk, w.t, QuantMode::kA8, pool));
  // M above the chunk with the chunk-sized scratch.
  const int64_t M = kQuantMChunk + 37;
  const std::vector<float> x = random_normal(size_t(M * 256), 9);
  const std::vector<float> bias(64, 0.5f);
  const std::vector<float> ref = gemm_ref(x, w.deq, bias, M, 64, 256);
  std::vector<uint8_t> scratch(quant_linear_scratch_bytes(kQuantMChunk, w.t, QuantMode::kA8, pool));
  std::vector<float> y = nan_filled(size_t(M * 64));
  ASSERT_TRUE(
      quant_linear(x.data(), M, w.t, nullptr, bias.data(), y.data(), scratch.data(), QuantMode::kA8, pool).is_ok());
  EXPECT_LE(rel_err(y, ref), 2e-2);
}

TEST(QuantLinear, BadWeightsAreErrors) {
  ThreadPool pool(1);
  std::vector<uint8_t> scratch(1 << 16);
  std::vector<float> x(256), y(4);
  Tensor i32 = Tensor::empty(DType::kI32, Shape{2, 128});
  EXPECT_EQ(quant_linear(x.data(), 1, i32, nullptr, nullptr, y.data(), scratch.data(), QuantMode::kExact, pool).code(),
            ErrorCode::kUnsupported);
  Tensor f8 = Tensor::empty(DType::kF8E4M3, Shape{2, 128});
  EXPECT_EQ(quant_linear(x.data(), 1, f8, nullptr, nullptr, y.data(), scratch.data(), QuantMode::kExact, pool).code(),
            ErrorCode::kInvalidArgument);
}

}  // namespace
}  // namespace quill::quant
