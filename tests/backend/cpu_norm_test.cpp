// Norms and the gated residual against double references, on odd sizes, with poisoned outputs.
// Inputs carry a large common offset so a one-pass (E[x^2] - E[x]^2) variance would fail.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "backend/cpu/ops.h"
#include "backend/op_test_util.h"

namespace quill {
namespace {

using test::nan_filled;
using test::random_normal;

// LN output is O(1); a few f32 ulps of it, plus the affine terms.
constexpr double kTol = 2e-6;

void ln_reference(const float* x, int64_t D, double eps, double& mean, double& rstd) {
  mean = 0.0;
  for (int64_t i = 0; i < D; ++i) mean += x[i];
  mean /= double(D);
  double var = 0.0;
  for (int64_t i = 0; i < D; ++i) var += (x[i] - mean) * (x[i] - mean);
  var /= double(D);
  rstd = 1.0 / std::sqrt(var + eps);
}

void expect_near_all(const std::vector<float>& y, const std::vector<double>& ref, const char* what) {
  for (size_t i = 0; i < y.size(); ++i) {
    ASSERT_TRUE(std::isfinite(y[i])) << what << " index " << i;
    ASSERT_NEAR(y[i], ref[i], kTol * (1.0 + std::fabs(ref[i]))) << what << " index " << i;
  }
}

TEST(CpuNorm, LayerNormWithAndWithoutAffine) {
  ThreadPool pool(3);
  for (int64_t rows : {1, 5, 33}) {
    for (int64_t D : {1, 7, 64, 257, 1536}) {
      const auto x = random_normal(size_t(rows * D), uint32_t(rows + D), 2.0f, 50.0f);
      const auto w = random_normal(size_t(D), 2, 0.3f, 1.0f);
      const auto b = random_normal(size_t(D), 3);
      for (int mode = 0; mode < 4; ++mode) {
        const float* wp = mode & 1 ? w.data() : nullptr;
        const float* bp = mode & 2 ? b.data() : nullptr;
        SCOPED_TRACE(testing::Message() << "rows=" << rows << " D=" << D << " w=" << bool(wp) << " b=" << bool(bp));
        auto y = nan_filled(x.size());
        cpu::layer_norm(x.data(), y.data(), rows, D, 1e-6f, wp, bp, pool);
        std::vector<double> ref(x.size());
        for (int64_t r = 0; r < rows; ++r) {
          double mean, rstd;
          ln_reference(x.data() + r * D, D, 1e-6, mean, rstd);
          for (int64_t i = 0; i < D; ++i) {
            double v = (x[size_t(r * D + i)] - mean) * rstd;
            if (wp) v *= wp[i];
            if (bp) v += bp[i];
            ref[size_t(r * D + i)] = v;
          }
        }
        expect_near_all(y, ref, "layer_norm");
      }
    }
  }
}

TEST(CpuNorm, LayerNormModulateUsesPerBatchChunksOfTheModulationVector) {
  ThreadPool pool(3);
  const int64_t B = 2;
  for (int64_t S : {1, 7, 33}) {
    for (int64_t D : {7, 64, 257}) {
      SCOPED_TRACE(testing::Message() << "S=" << S << " D=" << D);
      const int64_t stride = 6 * D;  // adaLN: [shift, scale, gate, ...] chunks in one vector per batch
      const auto x = random_normal(size_t(B * S * D), uint32_t(S * D), 3.0f, -20.0f);
      const auto mod = random_normal(size_t(B * stride), 9, 0.5f, 0.0f);
      const float* shift = mod.data() + 0 * D;
      const float* scale = mod.data() + 1 * D;
      auto y = nan_filled(x.size());
      cpu::layer_norm_modulate(x.data(), y.data(), B, S, D, 1e-6f, shift, scale, stride, pool);
      std::vector<double> ref(x.size());
      for (int64_t b = 0; b < B; ++b)
        for (int64_t s = 0; s < S; ++s) {
          const int64_t r = b * S + s;
          double mean, rstd;
          ln_reference(x.data() + r * D, D, 1e-6, mean, rstd);
          for (int64_t i = 0; i < D; ++i)
            ref[size_t(r * D + i)] =
                (x[size_t(r * D + i)] - mean) * rstd * (1.0 + scale[b * stride + i]) + shift[b * stride + i];
        }
      expect_near_all(y, ref, "layer_norm_modulate");
    }
  }
}

TEST(CpuNorm, RmsNormOutOfPlaceAndInPlace) {
  ThreadPool pool(3);
  for (int64_t rows : {1, 6, 33}) {
    for (int64_t D : {1, 8, 64, 72, 257}) {
      SCOPED_TRACE(testing::Message() << "rows=" << rows << " D=" << D);
      const auto x = random_normal(size_t(rows * D), uint32_t(rows * D), 3.0f, 0.5f);
      const auto w = random_normal(size_t(D), 4, 0.2f, 1.0f);
      for (bool with_w : {false, true}) {
        std::vector<double> ref(x.size());
        for (int64_t r = 0; r < rows; ++r) {
          double ms = 0.0;
          for (int64_t i = 0; i < D; ++i) ms += double(x[size_t(r * D + i)]) * x[size_t(r * D + i)];
          const double rstd = 1.0 / std::sqrt(ms / double(D) + 1e-6);
          for (int64_t i = 0; i < D; ++i)
            ref[size_t(r * D + i)] = x[size_t(r * D + i)] * rstd * (with_w ? w[size_t(i)] : 1.0);
        }
        auto y = nan_filled(x.size());
        cpu::rms_norm(x.data(), y.data(), rows, D, 1e-6f, with_w ? w.data() : nullptr, pool);
        expect_near_all(y, ref, "rms_norm");
        auto inplace = x;
        cpu::rms_norm(inplace.data(), inplace.data(), rows, D, 1e-6f, with_w ? w.data() : nullptr, pool);
        expect_near_all(inplace, ref, "rms_norm in place");
      }
    }
  }
}

TEST(CpuNorm, GatedResidual) {
  ThreadPool pool(3);
  const int64_t B = 2;
  for (int64_t S : {1, 7, 257}) {
    for (int64_t D : {1, 7, 64}) {
      SCOPED_TRACE(testing::Message() << "S=" << S << " D=" << D);
      const int64_t stride = 6 * D;
      auto x = random_normal(size_t(B * S * D), 1);
      const auto y = random_normal(size_t(B * S * D), 2);
      const auto mod = random_normal(size_t(B * stride), 3);
      const float* gate = mod.data() + 2 * D;
      std::vector<double> ref(x.size());
      for (int64_t r = 0; r < B * S; ++r)
        for (int64_t i = 0; i < D; ++i)
          ref[size_t(r * D + i)] =
              double(x[size_t(r * D + i)]) + double(gate[(r / S) * stride + i]) * y[size_t(r * D + i)];
      cpu::gated_residual(x.data(), y.data(), gate, B, S, D, stride, pool);
      expect_near_all(x, ref, "gated_residual");
    }
  }
}

}  // namespace
}  // namespace quill
