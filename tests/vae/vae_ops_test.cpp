// CPU ops of the VAE against their naive references, on random odd sizes with NaN-poisoned outputs.
#include <gtest/gtest.h>

#include <cstring>

#include "backend/cpu/conv2d.h"
#include "backend/cpu/gemm.h"
#include "backend/cpu/group_norm.h"
#include "backend/cpu/spatial_attention.h"
#include "backend/cpu/upsample.h"
#include "support/test_util.h"

namespace quill::cpu {
namespace {

using test::nan_filled;
using test::random_normal;
using test::rel_max;

ThreadPool& pool() {
  static ThreadPool p(3);  // more threads than the CI cores: exercises the splits
  return p;
}

// Naive GEMM in double: C = alpha op(A) op(B) + beta C.
void gemm_ref(bool ta, bool tb, int64_t M, int64_t N, int64_t K, float alpha, const float* A, int64_t lda,
              const float* B, int64_t ldb, float beta, float* C, int64_t ldc) {
  for (int64_t i = 0; i < M; ++i)
    for (int64_t j = 0; j < N; ++j) {
      double s = 0;
      for (int64_t k = 0; k < K; ++k)
        s += double(ta ? A[k * lda + i] : A[i * lda + k]) * (tb ? B[j * ldb + k] : B[k * ldb + j]);
      C[i * ldc + j] = float(alpha * s + beta * C[i * ldc + j]);
    }
}

TEST(VaeOps, GemmAllTransposesMatchReference) {
  const int64_t M = 13, N = 29, K = 37;
  for (GemmImpl impl : {GemmImpl::kAuto, GemmImpl::kPortable})
    for (int ta = 0; ta < 2; ++ta)
      for (int tb = 0; tb < 2; ++tb) {
        const int64_t lda = (ta ? M : K) + 3, ldb = (tb ? K : N) + 2, ldc = N + 5;
        auto A = random_normal(size_t((ta ? K : M) * lda), 1);
        auto B = random_normal(size_t((tb ? N : K) * ldb), 2);
        auto C = random_normal(size_t(M * ldc), 3), Cref = C;
        gemm_f32(ta, tb, M, N, K, 0.7f, A.data(), lda, B.data(), ldb, 0.5f, C.data(), ldc, pool(), impl);
        gemm_ref(ta, tb, M, N, K, 0.7f, A.data(), lda, B.data(), ldb, 0.5f, Cref.data(), ldc);
        EXPECT_LT(rel_max(C, Cref), 1e-5) << "ta " << ta << " tb " << tb << " impl " << int(impl);
      }
}

struct ConvCase {
  int64_t N, C, H, W, O, k, stride, pt, pl, pb, pr;
};

std::vector<uint16_t> to_half(const std::vector<float>& v, DType t) {
  std::vector<uint16_t> h(v.size());
  for (size_t i = 0; i < v.size(); ++i) h[i] = t == DType::kF16 ? f32_to_f16(v[i]) : f32_to_bf16(v[i]);
  return h;
}

TEST(VaeOps, Conv2dEveryPathMatchesNaive) {
  const ConvCase cases[] = {
      {2, 5, 13, 11, 7, 3, 1, 1, 1, 1, 1},     // the VAE's 3x3 "same" conv
      {1, 6, 9, 14, 5, 3, 2, 0, 0, 1, 1},      // downsample: pad (0, 1, 0, 1), stride 2
      {1, 4, 12, 17, 3, 3, 2, 0, 0, 1, 1},     // even height, odd width
      {1, 9, 7, 5, 3, 1, 1, 0, 0, 0, 0},       // 1x1 shortcut / quant conv
      {2, 3, 10, 9, 16, 3, 1, 1, 1, 1, 1},     // conv_in from 3 channels
      {1, 3, 6, 7, 2, 3, 3, 2, 1, 0, 2},       // odd stride and padding
      {1, 64, 20, 1000, 4, 3, 1, 1, 1, 1, 1},  // wide: im2col runs in several row chunks
  };
  int seed = 10;
  for (const auto& cc : cases) {
    Conv2dGeometry g{cc.N, cc.C, cc.H, cc.W, cc.O, cc.k, cc.k, cc.stride, cc.pt, cc.pl, cc.pb, cc.pr};
    ASSERT_TRUE(g.validate().is_ok());
    auto x = random_normal(size_t(g.N * g.C * g.H * g.W), uint32_t(++seed));
    auto w = random_normal(size_t(g.O * g.C * g.kh * g.kw), uint32_t(++seed), 0.3f);
    auto b = random_normal(size_t(g.O), uint32_t(++seed));
    const size_t ny = size_t(g.N * g.O * g.out_h() * g.out_w());
    for (DType wt : {DType::kF32, DType::kF16, DType::kBF16}) {
      // The layer converts the stored weights to f32; the reference uses the same rounded values.
      std::vector<uint16_t> half;
      Tensor wten;
      std::vector<float> wref = w;
      if (wt == DType::kF32) {
        wten = Tensor(w.data(), DType::kF32, {g.O, g.C, g.kh, g.kw});
      } else {
        half = to_half(w, wt);
        wten = Tensor(half.data(), wt, {g.O, g.C, g.kh, g.kw});
        convert_to_f32(wt, half.data(), wref.data(), int64_t(w.size()));
      }
      std::vector<float> ref(ny);
      conv2d_naive(x.data(), wref.data(), b.data(), ref.data(), g);
      auto layer = Conv2d::create(wten, Tensor(b.data(), DType::kF32, {g.O}), g.stride, g.pad_top, g.pad_left,
                                  g.pad_bottom, g.pad_right, "test");
      ASSERT_TRUE(layer.is_ok()) << layer.status().to_string();
      for (ConvImpl impl : {ConvImpl::kAuto, ConvImpl::kGemm, ConvImpl::kPortable}) {
        if (impl == ConvImpl::kPortable && g.W > 100) continue;  // slow and adds nothing
        layer->set_impl(impl);
        for (int rep = 0; rep < 2; ++rep) {  // the second call reuses the cached primitive
          auto y = nan_filled(ny);
          ASSERT_TRUE(layer->forward(x.data(), g.N, g.H, g.W, y.data(), pool()).is_ok());
          EXPECT_LT(rel_max(y, ref), 2e-6) << "case C" << g.C << " H" << g.H << " W" << g.W << " k" << g.kh << " s"
                                           << g.stride << " impl " << int(impl) << " dtype " << dtype_name(wt);
        }
      }
    }
  }
}

TEST(VaeOps, Conv2dWithoutBias) {
  Conv2dGeometry g{1, 4, 5, 6, 3, 3, 3, 1, 1, 1, 1, 1};
  auto x = random_normal(size_t(4 * 5 * 6), 1), w = random_normal(size_t(3 * 4 * 9), 2);
  std::vector<float> ref(size_t(3 * 5 * 6));
  conv2d_naive(x.data(), w.data(), nullptr, ref.data(), g);
  auto layer = Conv2d::create(Tensor(w.data(), DType::kF32, {3, 4, 3, 3}), Tensor(), 1, 1);
  ASSERT_TRUE(layer.is_ok());
  for (ConvImpl impl : {ConvImpl::kAuto, ConvImpl::kGemm}) {
    layer->set_impl(impl);
    auto y = nan_filled(ref.size());
    ASSERT_TRUE(layer->forward(x.data(), 1, 5, 6, y.data(), pool()).is_ok());
    EXPECT_LT(rel_max(y, ref), 2e-6);
  }
}

TEST(VaeOps, Conv2dRejectsBadShapes) {
  std::vector<float> w(2 * 3 * 9);
  EXPECT_FALSE(Conv2d::create(Tensor(w.data(), DType::kF32, {2, 27}), Tensor(), 1, 1).is_ok());
  std::vector<float> b(5);
  EXPECT_FALSE(
      Conv2d::create(Tensor(w.data(), DType::kF32, {2, 3, 3, 3}), Tensor(b.data(), DType::kF32, {5}), 1, 1).is_ok());
  auto layer = Conv2d::create(Tensor(w.data(), DType::kF32, {2, 3, 3, 3}), Tensor(), 1, 0);
  ASSERT_TRUE(layer.is_ok());
  std::vector<float> x(3 * 2 * 2), y(2 * 4);
  const Status s = layer->forward(x.data(), 1, 2, 2, y.data(), pool());  // 3x3 kernel on an unpadded 2x2 input
  EXPECT_EQ(s.code(), ErrorCode::kInvalidArgument) << s.to_string();
}

TEST(VaeOps, GroupNormMatchesNaive) {
  struct Case {
    int64_t N, C, HW, G;
    bool affine, silu, in_place;
    float offset;
  };
  const Case cases[] = {{2, 12, 63, 4, true, false, false, 0},
                        {1, 12, 35, 3, true, true, true, 0},
                        {3, 8, 17, 8, false, true, false, 0},
                        {1, 6, 101, 1, true, false, false, 0},
                        {2, 16, 45, 4, true, true, false, 50.0f}};  // mean far from 0: two-pass variance
  uint32_t seed = 100;
  for (const auto& c : cases) {
    auto x = random_normal(size_t(c.N * c.C * c.HW), ++seed, 1.5f, c.offset);
    auto gamma = random_normal(size_t(c.C), ++seed, 0.5f, 1.0f), beta = random_normal(size_t(c.C), ++seed);
    std::vector<float> ref(x.size());
    group_norm_naive(x.data(), ref.data(), c.N, c.C, c.HW, c.G, 1e-6f, c.affine ? gamma.data() : nullptr,
                     c.affine ? beta.data() : nullptr, c.silu);
    std::vector<float> y = c.in_place ? x : nan_filled(x.size());
    group_norm(c.in_place ? y.data() : x.data(), y.data(), c.N, c.C, c.HW, c.G, 1e-6f,
               c.affine ? gamma.data() : nullptr, c.affine ? beta.data() : nullptr, c.silu, pool());
    EXPECT_LT(rel_max(y, ref), c.offset > 0 ? 2e-5 : 2e-6) << "C " << c.C << " G " << c.G;
  }
}

TEST(VaeOps, UpsampleNearest2x) {
  const int64_t P = 5, H = 7, W = 3;
  auto x = random_normal(size_t(P * H * W), 7);
  auto y = nan_filled(size_t(P * 4 * H * W));
  upsample_nearest2x(x.data(), y.data(), P, H, W, pool());
  for (int64_t p = 0; p < P; ++p)
    for (int64_t h = 0; h < 2 * H; ++h)
      for (int64_t w = 0; w < 2 * W; ++w)
        ASSERT_EQ(y[size_t((p * 2 * H + h) * 2 * W + w)], x[size_t((p * H + h / 2) * W + w / 2)]);
}

TEST(VaeOps, SpatialAttentionMatchesNaive) {
  for (int64_t T : {int64_t(1), int64_t(45), int64_t(300)}) {  // 300: two query tiles, the second partial
    const int64_t C = 7;
    auto q = random_normal(size_t(C * T), 1), k = random_normal(size_t(C * T), 2), v = random_normal(size_t(C * T), 3);
    std::vector<float> ref(size_t(C * T));
    const float scale = 1.0f / std::sqrt(float(C));
    spatial_attention_naive(q.data(), k.data(), v.data(), ref.data(), C, T, scale);
    std::vector<float> scratch(spatial_attention_scratch_floats(T));
    for (GemmImpl impl : {GemmImpl::kAuto, GemmImpl::kPortable}) {
      auto out = nan_filled(size_t(C * T));
      spatial_attention(q.data(), k.data(), v.data(), out.data(), C, T, scale, scratch.data(), pool(), impl);
      EXPECT_LT(rel_max(out, ref), 1e-5) << "T " << T;
    }
  }
}

}  // namespace
}  // namespace quill::cpu
