// diffusers' AutoencoderKL (the SD / SD3 image VAE) on the CPU: decoder, encoder (posterior
// mean), and tiled decoding. Weight names are diffusers' own (`decoder.up_blocks.0.resnets.0.
// norm1.weight`, `decoder.mid_block.attentions.0.to_q.weight`, ...), the config is its
// config.json, so the diffusers source reads side by side with this file.
//
// Activations are NCHW f32, one sample at a time, in a workspace of three buffers sized for the
// largest activation of the size (plus the mid-block attention's q, k, v), carved from an arena
// that is planned once per size and reused. Every op goes through
// the Dispatcher, so the VAE runs on whatever backend the caller's engine has and is counted in
// its --diag. Weights are converted to f32 once at load (VAE convolutions are small); the CPU
// keeps its oneDNN primitive per input shape with each convolution's weights, so repeated decodes
// of one size build nothing.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/thread_pool.h"
#include "quill/status.h"
#include "quill/tensor.h"
#include "runtime/dispatcher.h"

namespace quill {

class ModelFiles;

struct AutoencoderKLConfig {
  int64_t in_channels = 3, out_channels = 3;
  std::vector<int64_t> block_out_channels = {64};
  int64_t layers_per_block = 1;
  int64_t latent_channels = 4;
  int64_t norm_num_groups = 32;
  int64_t sample_size = 32;
  double scaling_factor = 0.18215;
  double shift_factor = 0.0;  // config null -> 0
  bool use_quant_conv = true, use_post_quant_conv = true;
  bool mid_block_add_attention = true;

  // Missing keys take diffusers' defaults; unsupported block types / activations are errors.
  static Result<AutoencoderKLConfig> from_json(const nlohmann::json& j);
  Status validate() const;
  // Image pixels per latent pixel: 2^(number of blocks - 1).
  int64_t downscale() const { return int64_t(1) << (block_out_channels.size() - 1); }
};

// Tiled decoding as diffusers' `enable_tiling()`: latent tiles of tile_sample_size / downscale
// overlapping by `overlap`, blended linearly (blend_v / blend_h). Only used when the latent is
// larger than one tile. Peak memory is one tile's activations plus one row of blend strips.
struct VaeTiling {
  bool enabled = false;
  int64_t tile_sample_size = 0;  // pixels; 0: the config's sample_size (diffusers' default)
  double overlap = 0.25;         // tile_overlap_factor
};

// Returns the tensor stored under `name`; `expected` is the shape the model needs (sources may
// use it to check, or, like the benchmark's random source, to create the tensor).
using VaeWeightSource = std::function<Result<Tensor>(const std::string& name, const Shape& expected)>;

namespace vae {
struct GroupNormParams {
  std::vector<float> gamma, beta;
};
struct ResnetBlock {
  int64_t in = 0, out = 0;
  GroupNormParams norm1, norm2;
  Conv2dWeights conv1, conv2, conv_shortcut;  // conv_shortcut only when in != out
};
struct AttentionBlock {
  int64_t channels = 0;
  GroupNormParams group_norm;
  Conv2dWeights to_q, to_k, to_v, to_out;  // Linear(C, C) run as 1x1 convolutions over [C, T]
};
struct MidBlock {
  ResnetBlock resnet0, resnet1;
  bool has_attention = false;
  AttentionBlock attention;
};
struct SampleBlock {  // DownEncoderBlock2D / UpDecoderBlock2D
  std::vector<ResnetBlock> resnets;
  bool has_resample = false;
  Conv2dWeights resample_conv;  // downsamplers.0.conv / upsamplers.0.conv
};
struct Coder {  // Encoder or Decoder
  Conv2dWeights conv_in;
  std::vector<SampleBlock> blocks;  // down_blocks / up_blocks
  MidBlock mid;
  GroupNormParams norm_out;
  Conv2dWeights conv_out;
};
struct Workspace;
class Plans;
}  // namespace vae

class AutoencoderKL {
 public:
  // A diffusers model folder (config.json + weights) or anything else ModelFiles opens. The
  // encoder is loaded when its weights are present.
  static Result<std::unique_ptr<AutoencoderKL>> load(const ModelFiles& files);
  static Result<std::unique_ptr<AutoencoderKL>> load(const AutoencoderKLConfig& config, const VaeWeightSource& source,
                                                     bool with_encoder);

  const AutoencoderKLConfig& config() const { return config_; }
  bool has_encoder() const { return has_encoder_; }

  // Sampler latents [B, latent_channels, h, w] -> image [B, out_channels, h*f, w*f], about [-1, 1].
  // Applies z / scaling_factor + shift_factor first, as StableDiffusion3Pipeline does.
  Result<Tensor> decode(const Tensor& latents, Dispatcher& ops, const VaeTiling& tiling = {}) const;
  // diffusers' vae.decode(z).sample: no scaling.
  Result<Tensor> decode_unscaled(const Tensor& z, Dispatcher& ops, const VaeTiling& tiling = {}) const;
  // diffusers' vae.encode(x).latent_dist.mean for images [B, in_channels, H, W] (no scaling).
  Result<Tensor> encode_mean(const Tensor& image, Dispatcher& ops) const;
  // The same on a CPU-only dispatcher of its own over `pool` (tests, tools).
  Result<Tensor> decode(const Tensor& latents, ThreadPool& pool, const VaeTiling& tiling = {}) const;
  Result<Tensor> decode_unscaled(const Tensor& z, ThreadPool& pool, const VaeTiling& tiling = {}) const;
  Result<Tensor> encode_mean(const Tensor& image, ThreadPool& pool) const;

  // Bytes of activation workspace decode_unscaled needs for one latent of h x w (no tiling).
  size_t decode_workspace_bytes(int64_t h, int64_t w) const;
  // Plans (one arena per decode / encode size), built on first use and kept, like the
  // transformers' plans; calls of one size take turns on its plan.
  size_t plan_count() const;

  ~AutoencoderKL();

 private:
  AutoencoderKL();
  // One sample: z [latent, h, w] -> out [out_channels, h*f, w*f], post_quant_conv included.
  Status decode_one(const float* z, int64_t h, int64_t w, float* out, vae::Workspace& ws, Dispatcher& ops) const;
  Status decode_tiled_one(const float* z, int64_t h, int64_t w, float* out, int64_t out_h, int64_t out_w,
                          const VaeTiling& tiling, Dispatcher& ops) const;
  Result<Shape> tiled_output_shape(int64_t B, int64_t h, int64_t w, const VaeTiling& tiling) const;

  AutoencoderKLConfig config_;
  bool has_encoder_ = false;
  vae::Coder decoder_, encoder_;
  Conv2dWeights quant_conv_, post_quant_conv_;
  std::unique_ptr<vae::Plans> plans_;
};

}  // namespace quill
