// The public ImageGenerator (include/quill/quill.h) for SD3-class transformers: the SD3 engine,
// the VAE and the SD3 pipeline, on the device the caller chose.
#include <mutex>

#include "api/image_model_registry.h"
#include "core/thread_pool.h"
#include "pipeline/image_postprocess.h"
#include "pipeline/sd3_pipeline.h"
#include "runtime/device_select.h"

namespace quill {

const char* version() { return QUILL_VERSION; }

namespace {

class SD3ImageGenerator final : public ImageGenerator {
 public:
  explicit SD3ImageGenerator(int threads)
      : pool_(std::make_unique<ThreadPool>(threads > 0 ? threads : default_thread_count())) {}

  Status init(const OpenOptions& o, const std::string& architecture) {
    QUILL_ASSIGN_OR_RETURN(device_, select_device(o.device));
    QUILL_ASSIGN_OR_RETURN(engine_, open_sd3_engine(o.transformer, *pool_));
    engine_->set_primary_backend(device_.gpu.get());
    QUILL_ASSIGN_OR_RETURN(auto files, ModelFiles::open(o.vae));
    QUILL_ASSIGN_OR_RETURN(vae_, AutoencoderKL::load(*files));
    const SD3Config& c = engine_->model().config();
    info_.architecture = architecture;
    info_.in_channels = c.in_channels;
    info_.joint_attention_dim = c.joint_attention_dim;
    info_.pooled_projection_dim = c.pooled_projection_dim;
    info_.patch_size = c.patch_size;
    info_.vae_scale = vae_->config().downscale();
    info_.latent_scale = info_.vae_scale;
    info_.default_size = c.sample_size * info_.vae_scale;  // StableDiffusion3Pipeline's default
    info_.default_steps = 28;
    info_.default_guidance = 7.0f;
    info_.defaults_source = "SD3 defaults";
    info_.device = device_.description;
    return Status::ok();
  }

  const Info& info() const override { return info_; }

  Result<Output> generate(const Conditioning& cond, const Conditioning* negative, const Options& o) override {
    std::lock_guard<std::mutex> lock(mu_);
    SD3Conditioning c{cond.encoder_hidden_states, cond.pooled_projections}, n;
    if (negative) n = SD3Conditioning{negative->encoder_hidden_states, negative->pooled_projections};
    SD3GenerateRequest r;
    r.batch = cond.batch;
    r.height = o.height;
    r.width = o.width;
    r.text_len = cond.text_len;
    r.cond = &c;
    r.negative = negative ? &n : nullptr;
    r.steps = o.steps > 0 ? o.steps : info_.default_steps;
    r.guidance_scale = o.guidance_scale >= 0.0f ? o.guidance_scale : info_.default_guidance;
    r.shift = o.shift;
    r.seed = o.seed;
    r.initial_latents = o.initial_latents.empty() ? nullptr : &o.initial_latents;
    r.tiling.enabled = o.tiled_decode;
    SD3GenerateTimings t;
    StepControl control;
    control.on_step = o.on_step;
    control.cancel = o.cancel;
    QUILL_ASSIGN_OR_RETURN(Tensor image, sd3_generate(*engine_, *vae_, r, &t, control));
    Output out = rgb_output(image);
    out.denoise_ms = t.denoise_ms;
    out.decode_ms = t.decode_ms;
    out.plan_builds = engine_->plan_stats().builds;
    return out;
  }

  std::string op_counts() const override {
    std::lock_guard<std::mutex> lock(mu_);
    return "transformer + VAE ops:\n" + engine_->ops().stats().to_string();
  }

 private:
  mutable std::mutex mu_;
  std::unique_ptr<ThreadPool> pool_;
  DeviceSelection device_;
  std::unique_ptr<SD3Engine> engine_;
  std::unique_ptr<AutoencoderKL> vae_;
  Info info_;
};

}  // namespace

Result<std::unique_ptr<ImageGenerator>> open_sd3_image_generator(const ImageGenerator::OpenOptions& options,
                                                                 const std::string& architecture) {
  auto g = std::make_unique<SD3ImageGenerator>(options.threads);
  QUILL_RETURN_IF_ERROR(g->init(options, architecture));
  return std::unique_ptr<ImageGenerator>(std::move(g));
}

}  // namespace quill
