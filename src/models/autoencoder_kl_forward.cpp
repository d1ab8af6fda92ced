// AutoencoderKL forward passes: ResNet blocks, the mid-block attention, decoder and encoder, one
// sample at a time in a three-buffer workspace.
#include <algorithm>
#include <cmath>
#include <cstring>

#include "models/autoencoder_kl.h"
#include "models/autoencoder_kl_internal.h"

namespace quill {
namespace vae {

constexpr float kNormEps = 1e-6f;  // every GroupNorm of the VAE (resnets, attention, conv_norm_out)

void Workspace::carve(const WorkspaceSizes& s) {
  ArenaSizer sizer;
  for (int i = 0; i < 3; ++i) sizer.add(s.act * sizeof(float));
  sizer.add(s.attn * sizeof(float));
  sizer.add(s.latent * sizeof(float));
  arena.reserve(sizer.peak() + Arena::kAlign);
  for (auto& b : buf) b = arena.allocate_n<float>(s.act);
  attn = s.attn ? arena.allocate_n<float>(s.attn) : nullptr;
  latent = s.latent ? arena.allocate_n<float>(s.latent) : nullptr;
}

namespace {

void note(size_t& mx, int64_t c, int64_t h, int64_t w) { mx = std::max(mx, size_t(c * h * w)); }

size_t attention_floats(int64_t C, int64_t T) { return size_t(3 * C * T) + op_spatial_attention_scratch_floats(T); }

// The activation in buffer `idx` of the workspace: [C, H, W].
struct Act {
  int idx;
  int64_t C, H, W;
};

Status norm(const GroupNormParams& g, const float* x, float* y, int64_t C, int64_t HW, int64_t groups, bool silu,
            Dispatcher& ops) {
  return ops.group_norm(x, y, 1, C, HW, groups, kNormEps, g.gamma.data(), g.beta.data(), silu);
}

// ResnetBlock2D: x + conv2(silu(gn2(conv1(silu(gn1(x)))))), with a 1x1 shortcut when channels change.
Status resnet(const ResnetBlock& r, Act& x, Workspace& ws, int64_t groups, Dispatcher& ops) {
  const int j = (x.idx + 1) % 3, k = (x.idx + 2) % 3;
  float *X = ws.b(x.idx), *J = ws.b(j), *K = ws.b(k);
  const int64_t HW = x.H * x.W;
  QUILL_RETURN_IF_ERROR(norm(r.norm1, X, J, r.in, HW, groups, true, ops));
  QUILL_RETURN_IF_ERROR(ops.conv2d(J, 1, x.H, x.W, r.conv1, K));
  QUILL_RETURN_IF_ERROR(norm(r.norm2, K, K, r.out, HW, groups, true, ops));
  QUILL_RETURN_IF_ERROR(ops.conv2d(K, 1, x.H, x.W, r.conv2, J));
  const float* residual = X;
  if (r.in != r.out) {
    QUILL_RETURN_IF_ERROR(ops.conv2d(X, 1, x.H, x.W, r.conv_shortcut, K));
    residual = K;
  }
  QUILL_RETURN_IF_ERROR(ops.add(J, residual, r.out, HW, r.out));
  x = {j, r.out, x.H, x.W};
  return Status::ok();
}

// Attention(heads=1) with group_norm and a residual: x + to_out(attn(to_q(gn(x)), to_k(.), to_v(.))).
// Projections run on [C, T] as 1x1 convolutions, so the tokens never leave channel-major order.
Status attention(const AttentionBlock& a, Act& x, Workspace& ws, int64_t groups, Dispatcher& ops) {
  const int j = (x.idx + 1) % 3, k = (x.idx + 2) % 3;
  float *X = ws.b(x.idx), *J = ws.b(j), *K = ws.b(k);
  const int64_t C = a.channels, T = x.H * x.W;
  float *q = ws.attn, *kk = q + C * T, *v = kk + C * T, *scratch = v + C * T;
  QUILL_RETURN_IF_ERROR(norm(a.group_norm, X, J, C, T, groups, false, ops));
  QUILL_RETURN_IF_ERROR(ops.conv2d(J, 1, x.H, x.W, a.to_q, q));
  QUILL_RETURN_IF_ERROR(ops.conv2d(J, 1, x.H, x.W, a.to_k, kk));
  QUILL_RETURN_IF_ERROR(ops.conv2d(J, 1, x.H, x.W, a.to_v, v));
  QUILL_RETURN_IF_ERROR(ops.spatial_attention(q, kk, v, J, C, T, float(1.0 / std::sqrt(double(C))), scratch));
  QUILL_RETURN_IF_ERROR(ops.conv2d(J, 1, x.H, x.W, a.to_out, K));
  QUILL_RETURN_IF_ERROR(ops.add(K, X, C, T, C));
  x.idx = k;
  return Status::ok();
}

Status mid_block(const MidBlock& m, Act& x, Workspace& ws, int64_t groups, Dispatcher& ops) {
  QUILL_RETURN_IF_ERROR(resnet(m.resnet0, x, ws, groups, ops));
  if (m.has_attention) QUILL_RETURN_IF_ERROR(attention(m.attention, x, ws, groups, ops));
  return resnet(m.resnet1, x, ws, groups, ops);
}

}  // namespace

WorkspaceSizes decoder_sizes(const AutoencoderKLConfig& c, int64_t h, int64_t w) {
  WorkspaceSizes s;
  const auto& ch = c.block_out_channels;
  note(s.act, ch.back(), h, w);
  if (c.mid_block_add_attention) s.attn = attention_floats(ch.back(), h * w);
  int64_t prev = ch.back();
  for (size_t i = 0; i < ch.size(); ++i) {
    const int64_t out = ch[ch.size() - 1 - i];
    note(s.act, std::max(prev, out), h, w);
    if (i + 1 < ch.size()) {
      h *= 2;
      w *= 2;
      note(s.act, out, h, w);
    }
    prev = out;
  }
  return s;
}

WorkspaceSizes encoder_sizes(const AutoencoderKLConfig& c, int64_t h, int64_t w) {
  WorkspaceSizes s;
  const auto& ch = c.block_out_channels;
  int64_t prev = ch.front();
  for (size_t i = 0; i < ch.size(); ++i) {
    note(s.act, std::max(prev, ch[i]), h, w);
    if (i + 1 < ch.size()) {
      h = (h + 1 - 3) / 2 + 1;
      w = (w + 1 - 3) / 2 + 1;
      note(s.act, ch[i], h, w);
    }
    prev = ch[i];
  }
  if (c.mid_block_add_attention) s.attn = attention_floats(ch.back(), h * w);
  note(s.act, 2 * c.latent_channels, h, w);
  return s;
}

Status run_decoder(const Coder& d, const AutoencoderKLConfig& c, const float* z, int64_t h, int64_t w, float* out,
                   Workspace& ws, Dispatcher& ops) {
  const int64_t G = c.norm_num_groups;
  Act x{0, d.conv_in.out_channels, h, w};
  QUILL_RETURN_IF_ERROR(ops.conv2d(z, 1, h, w, d.conv_in, ws.b(0)));
  QUILL_RETURN_IF_ERROR(mid_block(d.mid, x, ws, G, ops));
  for (const auto& b : d.blocks) {
    for (const auto& r : b.resnets) QUILL_RETURN_IF_ERROR(resnet(r, x, ws, G, ops));
    if (b.has_resample) {  // Upsample2D: nearest x2, then a 3x3 convolution
      const int j = (x.idx + 1) % 3, k = (x.idx + 2) % 3;
      QUILL_RETURN_IF_ERROR(ops.upsample_nearest2x(ws.b(x.idx), ws.b(j), x.C, x.H, x.W));
      QUILL_RETURN_IF_ERROR(ops.conv2d(ws.b(j), 1, 2 * x.H, 2 * x.W, b.resample_conv, ws.b(k)));
      x = {k, x.C, 2 * x.H, 2 * x.W};
    }
  }
  QUILL_RETURN_IF_ERROR(norm(d.norm_out, ws.b(x.idx), ws.b(x.idx), x.C, x.H * x.W, G, true, ops));
  return ops.conv2d(ws.b(x.idx), 1, x.H, x.W, d.conv_out, out);
}

Status run_encoder(const Coder& e, const Conv2dWeights* quant_conv, const AutoencoderKLConfig& c, const float* img,
                   int64_t H, int64_t W, float* mean, Workspace& ws, Dispatcher& ops) {
  const int64_t G = c.norm_num_groups;
  Act x{0, e.conv_in.out_channels, H, W};
  QUILL_RETURN_IF_ERROR(ops.conv2d(img, 1, H, W, e.conv_in, ws.b(0)));
  for (const auto& b : e.blocks) {
    for (const auto& r : b.resnets) QUILL_RETURN_IF_ERROR(resnet(r, x, ws, G, ops));
    if (b.has_resample) {  // Downsample2D(padding=0): pad (0, 1, 0, 1), 3x3 stride 2
      const int j = (x.idx + 1) % 3;
      QUILL_RETURN_IF_ERROR(ops.conv2d(ws.b(x.idx), 1, x.H, x.W, b.resample_conv, ws.b(j)));
      x = {j, x.C, b.resample_conv.out_h(x.H), b.resample_conv.out_w(x.W)};
    }
  }
  QUILL_RETURN_IF_ERROR(mid_block(e.mid, x, ws, G, ops));
  QUILL_RETURN_IF_ERROR(norm(e.norm_out, ws.b(x.idx), ws.b(x.idx), x.C, x.H * x.W, G, true, ops));
  const int j = (x.idx + 1) % 3, k = (x.idx + 2) % 3;
  QUILL_RETURN_IF_ERROR(ops.conv2d(ws.b(x.idx), 1, x.H, x.W, e.conv_out, ws.b(j)));
  const float* moments = ws.b(j);  // [2 * latent, h, w]: mean, then logvar
  if (quant_conv) {
    QUILL_RETURN_IF_ERROR(ops.conv2d(ws.b(j), 1, x.H, x.W, *quant_conv, ws.b(k)));
    moments = ws.b(k);
  }
  std::memcpy(mean, moments, size_t(c.latent_channels * x.H * x.W) * sizeof(float));
  return Status::ok();
}

}  // namespace vae

namespace {

Status check_nchw(const Tensor& t, const char* what, int64_t channels) {
  if (t.dtype() != DType::kF32 || t.rank() != 4 || !t.is_contiguous() || t.device() != Device::kCPU)
    return invalid_argument(what, " must be a contiguous f32 CPU tensor [B, C, H, W], found ", t.describe());
  if (t.dim(1) != channels) return invalid_argument(what, " has ", t.dim(1), " channels, the VAE expects ", channels);
  if (t.dim(0) <= 0 || t.dim(2) <= 0 || t.dim(3) <= 0) return invalid_argument(what, " is empty: ", t.describe());
  return Status::ok();
}

}  // namespace

AutoencoderKL::AutoencoderKL()
    : plans_(std::make_unique<vae::Plans>([this](const vae::PlanKey& k) -> Result<std::unique_ptr<vae::Plan>> {
        auto p = std::make_unique<vae::Plan>();
        vae::WorkspaceSizes s =
            k.kind == 0 ? vae::decoder_sizes(config_, k.h, k.w) : vae::encoder_sizes(config_, k.h, k.w);
        if (k.kind == 0) s.latent = size_t(config_.latent_channels * k.h * k.w);
        p->ws.carve(s);
        return p;
      })) {}
AutoencoderKL::~AutoencoderKL() = default;

size_t AutoencoderKL::plan_count() const { return plans_->size(); }

size_t AutoencoderKL::decode_workspace_bytes(int64_t h, int64_t w) const {
  const auto s = vae::decoder_sizes(config_, h, w);
  return (3 * s.act + s.attn + size_t(config_.latent_channels * h * w)) * sizeof(float);
}

Status AutoencoderKL::decode_one(const float* z, int64_t h, int64_t w, float* out, vae::Workspace& ws,
                                 Dispatcher& ops) const {
  if (config_.use_post_quant_conv) {
    QUILL_RETURN_IF_ERROR(ops.conv2d(z, 1, h, w, post_quant_conv_, ws.latent));
    z = ws.latent;
  }
  return vae::run_decoder(decoder_, config_, z, h, w, out, ws, ops);
}

Result<Tensor> AutoencoderKL::decode_unscaled(const Tensor& z, Dispatcher& ops, const VaeTiling& tiling) const {
  QUILL_RETURN_IF_ERROR(check_nchw(z, "latents", config_.latent_channels));
  const int64_t B = z.dim(0), h = z.dim(2), w = z.dim(3), f = config_.downscale();
  if (tiling.enabled) {
    QUILL_ASSIGN_OR_RETURN(Shape shape, tiled_output_shape(B, h, w, tiling));
    if (shape.rank() == 4) {  // rank 0: the latent fits one tile, decode it whole
      Tensor out = Tensor::empty(DType::kF32, shape);
      const int64_t per_in = z.numel() / B, per_out = out.numel() / B;
      for (int64_t b = 0; b < B; ++b)
        QUILL_RETURN_IF_ERROR(decode_tiled_one(z.data_as<float>() + b * per_in, h, w,
                                               out.data_as<float>() + b * per_out, shape[2], shape[3], tiling, ops));
      return out;
    }
  }
  QUILL_ASSIGN_OR_RETURN(vae::Plan * plan, plans_->get({0, h, w}));
  std::lock_guard<std::mutex> lock(plan->mu);
  Tensor out = Tensor::empty(DType::kF32, {B, config_.out_channels, h * f, w * f});
  const int64_t per_in = z.numel() / B, per_out = out.numel() / B;
  for (int64_t b = 0; b < B; ++b)
    QUILL_RETURN_IF_ERROR(
        decode_one(z.data_as<float>() + b * per_in, h, w, out.data_as<float>() + b * per_out, plan->ws, ops));
  return out;
}

Result<Tensor> AutoencoderKL::decode(const Tensor& latents, Dispatcher& ops, const VaeTiling& tiling) const {
  QUILL_RETURN_IF_ERROR(check_nchw(latents, "latents", config_.latent_channels));
  // StableDiffusion3Pipeline: latents / scaling_factor + shift_factor, in f32.
  Tensor z = Tensor::empty(DType::kF32, latents.shape());
  const float sf = float(config_.scaling_factor), sh = float(config_.shift_factor);
  const float* src = latents.data_as<float>();
  float* dst = z.data_as<float>();
  for (int64_t i = 0; i < z.numel(); ++i) dst[i] = src[i] / sf + sh;
  return decode_unscaled(z, ops, tiling);
}

Result<Tensor> AutoencoderKL::encode_mean(const Tensor& image, Dispatcher& ops) const {
  if (!has_encoder_) return unsupported("this AutoencoderKL was loaded without encoder weights");
  QUILL_RETURN_IF_ERROR(check_nchw(image, "image", config_.in_channels));
  const int64_t B = image.dim(0), H = image.dim(2), W = image.dim(3);
  int64_t h = H, w = W;
  for (size_t i = 0; i + 1 < config_.block_out_channels.size(); ++i) {
    if (h < 2 || w < 2) return invalid_argument("image ", H, "x", W, " is too small to encode");
    h = (h + 1 - 3) / 2 + 1;
    w = (w + 1 - 3) / 2 + 1;
  }
  QUILL_ASSIGN_OR_RETURN(vae::Plan * plan, plans_->get({1, H, W}));
  std::lock_guard<std::mutex> lock(plan->mu);
  vae::Workspace& ws = plan->ws;
  Tensor out = Tensor::empty(DType::kF32, {B, config_.latent_channels, h, w});
  const int64_t per_in = image.numel() / B, per_out = out.numel() / B;
  for (int64_t b = 0; b < B; ++b)
    QUILL_RETURN_IF_ERROR(vae::run_encoder(encoder_, config_.use_quant_conv ? &quant_conv_ : nullptr, config_,
                                           image.data_as<float>() + b * per_in, H, W,
                                           out.data_as<float>() + b * per_out, ws, ops));
  return out;
}

// CPU-only conveniences: a dispatcher of their own over `pool`.
Result<Tensor> AutoencoderKL::decode(const Tensor& latents, ThreadPool& pool, const VaeTiling& tiling) const {
  auto cpu = make_cpu_backend(pool);
  Dispatcher ops(cpu.get());
  return decode(latents, ops, tiling);
}
Result<Tensor> AutoencoderKL::decode_unscaled(const Tensor& z, ThreadPool& pool, const VaeTiling& tiling) const {
  auto cpu = make_cpu_backend(pool);
  Dispatcher ops(cpu.get());
  return decode_unscaled(z, ops, tiling);
}
Result<Tensor> AutoencoderKL::encode_mean(const Tensor& image, ThreadPool& pool) const {
  auto cpu = make_cpu_backend(pool);
  Dispatcher ops(cpu.get());
  return encode_mean(image, ops);
}

}  // namespace quill
