#include "backend/cpu/conv2d.h"

#include <algorithm>
#include <atomic>
#include <map>
#include <mutex>
#include <tuple>
#include <unordered_map>

#if defined(QUILL_HAVE_DNNL)
#include <dnnl.hpp>
#endif

namespace quill::cpu {

Status Conv2dGeometry::validate() const {
  if (N <= 0 || C <= 0 || H <= 0 || W <= 0 || O <= 0 || kh <= 0 || kw <= 0 || stride <= 0)
    return invalid_argument("conv2d: sizes must be positive (N ", N, ", C ", C, ", H ", H, ", W ", W, ", O ", O,
                            ", kernel ", kh, "x", kw, ", stride ", stride, ")");
  if (pad_top < 0 || pad_left < 0 || pad_bottom < 0 || pad_right < 0)
    return invalid_argument("conv2d: negative padding");
  if (H + pad_top + pad_bottom < kh || W + pad_left + pad_right < kw)
    return invalid_argument("conv2d: a ", kh, "x", kw, " kernel does not fit a padded ", H + pad_top + pad_bottom, "x",
                            W + pad_left + pad_right, " input");
  return Status::ok();
}

void conv2d_naive(const float* x, const float* w, const float* bias, float* y, const Conv2dGeometry& g) {
  const int64_t Ho = g.out_h(), Wo = g.out_w();
  for (int64_t n = 0; n < g.N; ++n)
    for (int64_t o = 0; o < g.O; ++o)
      for (int64_t oh = 0; oh < Ho; ++oh)
        for (int64_t ow = 0; ow < Wo; ++ow) {
          double acc = bias ? bias[o] : 0.0;
          for (int64_t c = 0; c < g.C; ++c)
            for (int64_t i = 0; i < g.kh; ++i) {
              const int64_t ih = oh * g.stride - g.pad_top + i;
              if (ih < 0 || ih >= g.H) continue;
              for (int64_t j = 0; j < g.kw; ++j) {
                const int64_t iw = ow * g.stride - g.pad_left + j;
                if (iw < 0 || iw >= g.W) continue;
                acc +=
                    double(x[((n * g.C + c) * g.H + ih) * g.W + iw]) * double(w[((o * g.C + c) * g.kh + i) * g.kw + j]);
              }
            }
          y[((n * g.O + o) * Ho + oh) * Wo + ow] = float(acc);
        }
}

namespace {

constexpr int64_t kColBudgetFloats = int64_t(4) << 20;  // 16 MB of im2col per chunk

bool is_pointwise(const Conv2dGeometry& g) {
  return g.kh == 1 && g.kw == 1 && g.stride == 1 && g.pad_top == 0 && g.pad_left == 0 && g.pad_bottom == 0 &&
         g.pad_right == 0;
}

int64_t rows_per_chunk(const Conv2dGeometry& g) {
  const int64_t K = g.C * g.kh * g.kw, Wo = g.out_w();
  return std::clamp<int64_t>(kColBudgetFloats / std::max<int64_t>(1, K * Wo), 1, g.out_h());
}

}  // namespace

size_t conv2d_gemm_scratch_floats(const Conv2dGeometry& g) {
  if (is_pointwise(g)) return 0;
  return size_t(g.C * g.kh * g.kw * rows_per_chunk(g) * g.out_w());
}

void conv2d_gemm(const float* x, const float* w, const float* bias, float* y, const Conv2dGeometry& g, float* scratch,
                 ThreadPool& pool, GemmImpl gemm) {
  const int64_t Ho = g.out_h(), Wo = g.out_w(), P = Ho * Wo, K = g.C * g.kh * g.kw;
  for (int64_t n = 0; n < g.N; ++n) {
    const float* xn = x + n * g.C * g.H * g.W;
    float* yn = y + n * g.O * P;
    // y = bias, then y += W . col (beta = 1).
    pool.parallel_for(g.O, 16, [&](int64_t o0, int64_t o1) {
      for (int64_t o = o0; o < o1; ++o) std::fill(yn + o * P, yn + (o + 1) * P, bias ? bias[o] : 0.0f);
    });
    if (is_pointwise(g)) {
      gemm_f32(false, false, g.O, P, K, 1.0f, w, K, xn, P, 1.0f, yn, P, pool, gemm);
      continue;
    }
    const int64_t R = rows_per_chunk(g);
    for (int64_t r0 = 0; r0 < Ho; r0 += R) {
      const int64_t r1 = std::min(Ho, r0 + R), cols = (r1 - r0) * Wo;
      // col[k = (c, i, j)][(r - r0) * Wo + ow] = x[c][r * s - pt + i][ow * s - pl + j] (0 outside).
      pool.parallel_for(K, 4, [&](int64_t k0, int64_t k1) {
        for (int64_t k = k0; k < k1; ++k) {
          const int64_t c = k / (g.kh * g.kw), i = (k / g.kw) % g.kh, j = k % g.kw;
          float* col = scratch + k * cols;
          for (int64_t r = r0; r < r1; ++r) {
            const int64_t ih = r * g.stride - g.pad_top + i;
            float* out = col + (r - r0) * Wo;
            if (ih < 0 || ih >= g.H) {
              std::fill(out, out + Wo, 0.0f);
              continue;
            }
            const float* row = xn + (c * g.H + ih) * g.W;
            for (int64_t ow = 0; ow < Wo; ++ow) {
              const int64_t iw = ow * g.stride - g.pad_left + j;
              out[ow] = (iw >= 0 && iw < g.W) ? row[iw] : 0.0f;
            }
          }
        }
      });
      gemm_f32(false, false, g.O, cols, K, 1.0f, w, K, scratch, cols, 1.0f, yn + r0 * Wo, P, pool, gemm);
    }
  }
}

namespace {
std::atomic<ConvImpl> g_default_impl{ConvImpl::kAuto};
}
void set_conv2d_default_impl(ConvImpl impl) { g_default_impl.store(impl); }
ConvImpl conv2d_default_impl() { return g_default_impl.load(); }
bool conv2d_have_dnnl() {
#if defined(QUILL_HAVE_DNNL)
  return true;
#else
  return false;
#endif
}

#if defined(QUILL_HAVE_DNNL)
namespace {
dnnl::engine& dnnl_engine() {
  static dnnl::engine eng(dnnl::engine::kind::cpu, 0);
  return eng;
}
}  // namespace
#endif

struct Conv2d::Cache {
  struct Entry {
#if defined(QUILL_HAVE_DNNL)
    dnnl::convolution_forward prim;
    dnnl::memory::desc src, wei, bia, dst;
#endif
    std::vector<float> scratch;
  };
  std::mutex mu;
  std::map<std::tuple<int64_t, int64_t, int64_t, int>, Entry> entries;
};

Conv2d::Conv2d() : cache_(std::make_unique<Cache>()) {}
Conv2d::~Conv2d() = default;
// Moves keep owned_ (a shared_ptr) and so the buffers wp_ / bp_ point into.
Conv2d::Conv2d(Conv2d&&) noexcept = default;
Conv2d& Conv2d::operator=(Conv2d&&) noexcept = default;

Conv2d Conv2d::view(const float* weight, const float* bias, int64_t O, int64_t C, int64_t kh, int64_t kw,
                    int64_t stride, int64_t pad_top, int64_t pad_left, int64_t pad_bottom, int64_t pad_right) {
  Conv2d c;
  c.O_ = O;
  c.C_ = C;
  c.kh_ = kh;
  c.kw_ = kw;
  c.stride_ = stride;
  c.pt_ = pad_top;
  c.pl_ = pad_left;
  c.pb_ = pad_bottom;
  c.pr_ = pad_right;
  c.wp_ = weight;
  c.bp_ = bias;
  return c;
}

Result<Conv2d> Conv2d::create(const Tensor& weight, const Tensor& bias, int64_t stride, int64_t pad_top,
                              int64_t pad_left, int64_t pad_bottom, int64_t pad_right, const std::string& name) {
  QUILL_ASSIGN_OR_RETURN(Conv2dWeights w,
                         Conv2dWeights::create(weight, bias, stride, pad_top, pad_left, pad_bottom, pad_right, name));
  auto owned = std::make_shared<const Conv2dWeights>(std::move(w));
  Conv2d c = view(owned->weight.data(), owned->bias_ptr(), owned->out_channels, owned->in_channels, owned->kh,
                  owned->kw, owned->stride, owned->pad_top, owned->pad_left, owned->pad_bottom, owned->pad_right);
  c.owned_ = std::move(owned);
  return c;
}

Conv2dGeometry Conv2d::geometry(int64_t N, int64_t H, int64_t W) const {
  Conv2dGeometry g;
  g.N = N;
  g.C = C_;
  g.H = H;
  g.W = W;
  g.O = O_;
  g.kh = kh_;
  g.kw = kw_;
  g.stride = stride_;
  g.pad_top = pt_;
  g.pad_left = pl_;
  g.pad_bottom = pb_;
  g.pad_right = pr_;
  return g;
}

Status Conv2d::forward(const float* x, int64_t N, int64_t H, int64_t W, float* y, ThreadPool& pool) const {
  const Conv2dGeometry g = geometry(N, H, W);
  QUILL_RETURN_IF_ERROR(g.validate());
  ConvImpl impl = impl_ == ConvImpl::kAuto ? conv2d_default_impl() : impl_;
  if (impl == ConvImpl::kAuto && !conv2d_have_dnnl()) impl = ConvImpl::kGemm;
  const float* bias = bp_;

  Cache::Entry* e = nullptr;
  {
    std::lock_guard<std::mutex> lock(cache_->mu);
    auto [it, inserted] = cache_->entries.try_emplace(std::make_tuple(N, H, W, int(impl)));
    e = &it->second;
    if (inserted) {
      if (impl != ConvImpl::kAuto) {
        e->scratch.resize(conv2d_gemm_scratch_floats(g));
      } else {
#if defined(QUILL_HAVE_DNNL)
        using dt = dnnl::memory::data_type;
        using tag = dnnl::memory::format_tag;
        try {
          e->src = dnnl::memory::desc({N, C_, H, W}, dt::f32, tag::nchw);
          e->wei = dnnl::memory::desc({O_, C_, kh_, kw_}, dt::f32, tag::oihw);
          e->bia = dnnl::memory::desc({O_}, dt::f32, tag::x);
          e->dst = dnnl::memory::desc({N, O_, g.out_h(), g.out_w()}, dt::f32, tag::nchw);
          dnnl::convolution_forward::desc d(dnnl::prop_kind::forward_inference, dnnl::algorithm::convolution_direct,
                                            e->src, e->wei, bias ? e->bia : dnnl::memory::desc(), e->dst,
                                            {stride_, stride_}, {pt_, pl_}, {pb_, pr_});
          e->prim = dnnl::convolution_forward(dnnl::convolution_forward::primitive_desc(d, dnnl_engine()));
        } catch (const dnnl::error& err) {
          cache_->entries.erase(it);
          return internal_error("oneDNN could not create a convolution: ", err.what());
        }
#endif
      }
    }
  }
  if (impl != ConvImpl::kAuto) {
    conv2d_gemm(x, wp_, bias, y, g, e->scratch.data(), pool,
                impl == ConvImpl::kPortable ? GemmImpl::kPortable : GemmImpl::kAuto);
    return Status::ok();
  }
#if defined(QUILL_HAVE_DNNL)
  try {
    auto& eng = dnnl_engine();
    dnnl::stream s(eng);
    dnnl::memory src(e->src, eng, const_cast<float*>(x)), wei(e->wei, eng, const_cast<float*>(wp_)),
        dst(e->dst, eng, y);
    std::unordered_map<int, dnnl::memory> args{{DNNL_ARG_SRC, src}, {DNNL_ARG_WEIGHTS, wei}, {DNNL_ARG_DST, dst}};
    if (bias) args.emplace(DNNL_ARG_BIAS, dnnl::memory(e->bia, eng, const_cast<float*>(bias)));
    e->prim.execute(s, args);
    s.wait();
  } catch (const dnnl::error& err) {
    return internal_error("oneDNN convolution failed: ", err.what());
  }
#endif
  return Status::ok();
}

}  // namespace quill::cpu
