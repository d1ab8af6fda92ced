// The public ImageGenerator (include/quill/quill.h) for FLUX.2 transformers: the FLUX.2 engine,
// AutoencoderKLFlux2 (with its BatchNorm latent statistics) and the klein pipeline. The sampling
// mode comes from the diffusers pipeline folder around the transformer when there is one:
// model_index.json's `is_distilled` and scheduler/scheduler_config.json.
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <optional>

#include "api/image_model_registry.h"
#include "core/thread_pool.h"
#include "io/json_util.h"
#include "pipeline/flux2_pipeline.h"
#include "pipeline/flux2_prompt.h"
#include "pipeline/image_postprocess.h"
#include "runtime/device_select.h"

namespace quill {

namespace {

namespace fs = std::filesystem;

// The pipeline folder around the transformer: `<pipeline>/transformer/` (the folder or a file in
// it), or the folder of a single file (`<pipeline>/klein-tq2.gguf`), whichever has model_index.json.
fs::path pipeline_folder_of(const std::string& transformer) {
  std::error_code ec;
  const fs::path p = fs::absolute(fs::path(transformer), ec);
  const fs::path dir = fs::is_directory(p, ec) ? p : p.parent_path();
  for (const fs::path& candidate : {dir.parent_path(), dir})
    if (fs::is_regular_file(candidate / "model_index.json", ec)) return candidate;
  return dir.parent_path();
}

Result<nlohmann::json> read_json_file(const fs::path& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) return io_error("cannot open").with_file(path.string());
  std::string text((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  auto j = parse_json_checked(text, path.filename().string());
  if (!j) return j.take_status().with_file(path.string());
  return std::move(*j);
}

class Flux2ImageGenerator final : public ImageGenerator {
 public:
  explicit Flux2ImageGenerator(int threads)
      : pool_(std::make_unique<ThreadPool>(threads > 0 ? threads : default_thread_count())) {}

  Status init(const OpenOptions& o, const std::string& architecture) {
    QUILL_ASSIGN_OR_RETURN(device_, select_device(o.device));
    QUILL_ASSIGN_OR_RETURN(engine_, open_engine<Flux2Transformer>(o.transformer, *pool_));
    engine_->set_primary_backend(device_.gpu.get());
    QUILL_ASSIGN_OR_RETURN(auto files, ModelFiles::open(o.vae));
    QUILL_ASSIGN_OR_RETURN(vae_, AutoencoderKL::load(*files));
    QUILL_ASSIGN_OR_RETURN(stats_, Flux2LatentStats::load(*files, vae_->config().latent_channels));
    const Flux2Config& c = engine_->model().config();
    if (4 * vae_->config().latent_channels != c.in_channels)
      return invalid_argument("the VAE's ", vae_->config().latent_channels, " latent channels (", 4 * vae_->config().latent_channels,
                              " after 2x2 patches) do not fit the transformer's in_channels ", c.in_channels)
          .with_file(o.vae);
    QUILL_RETURN_IF_ERROR(read_pipeline_settings(o.transformer));
    if (!o.text_encoder.empty() || !o.tokenizer.empty()) {
      if (o.text_encoder.empty())
        return invalid_argument("a tokenizer without a text encoder: prompts need the Qwen3 text encoder too");
      QUILL_ASSIGN_OR_RETURN(prompts_, Flux2PromptEncoder::open(o.text_encoder, o.tokenizer, *pool_));
      prompts_->ops().set_primary(device_.gpu.get());
      if (prompts_->embed_dim() != c.joint_attention_dim)
        return invalid_argument("the text encoder gives ", prompts_->embed_dim(), "-wide embeddings (3 x hidden) but "
                                "the transformer takes ", c.joint_attention_dim)
            .with_file(o.text_encoder);
      info_.takes_prompts = true;
    }
    info_.architecture = architecture;
    info_.in_channels = c.in_channels;
    info_.joint_attention_dim = c.joint_attention_dim;
    info_.pooled_projection_dim = 0;
    info_.vae_scale = vae_->config().downscale();
    info_.patch_size = 2;
    info_.latent_scale = 2 * info_.vae_scale;
    info_.default_size = 128 * info_.vae_scale;  // Flux2KleinPipeline: default_sample_size 128 x the VAE factor
    info_.device = device_.description;
    return Status::ok();
  }

  const Info& info() const override { return info_; }

  Result<Output> generate(const Conditioning& cond, const Conditioning* negative, const Options& o) override {
    std::lock_guard<std::mutex> lock(mu_);
    if (!cond.pooled_projections.empty() || (negative && !negative->pooled_projections.empty()))
      return invalid_argument("FLUX.2 takes no pooled projections (only prompt embeddings)");
    Flux2Conditioning c{cond.encoder_hidden_states, cond.batch, cond.text_len}, n;
    if (negative) n = Flux2Conditioning{negative->encoder_hidden_states, negative->batch, negative->text_len};
    Flux2GenerateRequest r;
    r.height = o.height;
    r.width = o.width;
    r.cond = &c;
    r.negative = negative ? &n : nullptr;
    r.steps = o.steps > 0 ? o.steps : info_.default_steps;
    r.guidance_scale = o.guidance_scale >= 0.0f ? o.guidance_scale : info_.default_guidance;
    r.distilled = info_.guidance_distilled;
    r.scheduler = scheduler_;
    r.seed = o.seed;
    r.initial_latents = o.initial_latents.empty() ? nullptr : &o.initial_latents;
    r.tiling.enabled = o.tiled_decode;
    Flux2GenerateTimings t;
    StepControl control;
    control.on_step = o.on_step;
    control.cancel = o.cancel;
    QUILL_ASSIGN_OR_RETURN(Tensor image, flux2_generate(*engine_, *vae_, stats_, r, &t, control));
    Output out = rgb_output(image);
    out.denoise_ms = t.denoise_ms;
    out.decode_ms = t.decode_ms;
    out.plan_builds = engine_->plan_stats().builds;
    return out;
  }

  Result<Conditioning> encode_prompts(const std::vector<std::string>& prompts) override {
    std::lock_guard<std::mutex> lock(mu_);
    if (!prompts_) return ImageGenerator::encode_prompts(prompts);
    // The empty prompt (the negative of every CFG run) is encoded once per generator.
    const bool all_empty = std::all_of(prompts.begin(), prompts.end(), [](const std::string& p) { return p.empty(); });
    if (all_empty && empty_prompt_) {
      Conditioning c;
      c.batch = int64_t(prompts.size());
      c.text_len = empty_prompt_->text_len;
      for (size_t i = 0; i < prompts.size(); ++i)
        c.encoder_hidden_states.insert(c.encoder_hidden_states.end(), empty_prompt_->prompt_embeds.begin(),
                                       empty_prompt_->prompt_embeds.end());
      return c;
    }
    QUILL_ASSIGN_OR_RETURN(Flux2Conditioning e, prompts_->encode(prompts));
    if (all_empty) {
      Flux2Conditioning one;
      one.batch = 1;
      one.text_len = e.text_len;
      one.prompt_embeds.assign(e.prompt_embeds.begin(), e.prompt_embeds.begin() + e.text_len * prompts_->embed_dim());
      empty_prompt_ = std::move(one);
    }
    Conditioning c;
    c.batch = e.batch;
    c.text_len = e.text_len;
    c.encoder_hidden_states = std::move(e.prompt_embeds);
    return c;
  }

  std::string op_counts() const override {
    std::lock_guard<std::mutex> lock(mu_);
    std::string s = "transformer + VAE ops:\n" + engine_->ops().stats().to_string();
    if (prompts_) s += "text encoder ops:\n" + prompts_->ops().stats().to_string();
    return s;
  }

 private:
  // model_index.json (is_distilled) and scheduler/scheduler_config.json beside the transformer's
  // folder; klein's defaults without them.
  Status read_pipeline_settings(const std::string& transformer) {
    const fs::path root = pipeline_folder_of(transformer);
    std::error_code ec;
    scheduler_ = flux2_klein_scheduler_config();
    if (fs::is_regular_file(root / "scheduler" / "scheduler_config.json", ec)) {
      QUILL_ASSIGN_OR_RETURN(auto j, read_json_file(root / "scheduler" / "scheduler_config.json"));
      auto s = FlowMatchEulerConfig::from_json(j);
      if (!s) return s.take_status().with_file((root / "scheduler" / "scheduler_config.json").string());
      scheduler_ = *s;
    }
    const fs::path index = root / "model_index.json";
    if (fs::is_regular_file(index, ec)) {
      QUILL_ASSIGN_OR_RETURN(auto j, read_json_file(index));
      if (auto it = j.find("is_distilled"); it != j.end() && it->is_boolean()) {
        info_.guidance_distilled = it->get<bool>();
        info_.defaults_source = index.string();
        // Distilled klein: 4 steps without guidance (the model card); base: diffusers' call defaults.
        info_.default_steps = info_.guidance_distilled ? 4 : 50;
        info_.default_guidance = info_.guidance_distilled ? 1.0f : 4.0f;
        return Status::ok();
      }
    }
    // Unknown: the cheap distilled settings; a base model wants --steps 50 --cfg 4 and a negative.
    info_.guidance_distilled = false;
    info_.default_steps = 4;
    info_.default_guidance = 1.0f;
    info_.defaults_source = "no model_index.json beside the transformer: 4 steps, no guidance (klein distilled)";
    return Status::ok();
  }

  mutable std::mutex mu_;
  std::unique_ptr<ThreadPool> pool_;
  DeviceSelection device_;
  std::unique_ptr<Flux2Engine> engine_;
  std::unique_ptr<AutoencoderKL> vae_;
  Flux2LatentStats stats_;
  FlowMatchEulerConfig scheduler_;
  std::unique_ptr<Flux2PromptEncoder> prompts_;
  std::optional<Flux2Conditioning> empty_prompt_;
  Info info_;
};

}  // namespace

Result<std::unique_ptr<ImageGenerator>> open_flux2_image_generator(const ImageGenerator::OpenOptions& options,
                                                                   const std::string& architecture) {
  auto g = std::make_unique<Flux2ImageGenerator>(options.threads);
  QUILL_RETURN_IF_ERROR(g->init(options, architecture));
  return std::unique_ptr<ImageGenerator>(std::move(g));
}

}  // namespace quill
