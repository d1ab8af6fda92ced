// The public ImageGenerator (include/quill/quill.h) over the SD3 engine, VAE and pipeline.
#include "quill/quill.h"

#include "core/thread_pool.h"
#include "pipeline/image_postprocess.h"
#include "pipeline/sd3_pipeline.h"

namespace quill {

const char* version() { return QUILL_VERSION; }

namespace {

class SD3ImageGenerator final : public ImageGenerator {
 public:
  SD3ImageGenerator(std::unique_ptr<ThreadPool> pool) : pool_(std::move(pool)) {}

  Status init(const std::string& transformer_path, const std::string& vae_path) {
    QUILL_ASSIGN_OR_RETURN(engine_, open_sd3_engine(transformer_path, *pool_));
    QUILL_ASSIGN_OR_RETURN(auto files, ModelFiles::open(vae_path));
    QUILL_ASSIGN_OR_RETURN(vae_, AutoencoderKL::load(*files));
    return Status::ok();
  }

  Result<Output> generate(const Conditioning& cond, const Conditioning* negative, const Options& o) override {
    SD3Conditioning c{cond.encoder_hidden_states, cond.pooled_projections}, n;
    if (negative) n = SD3Conditioning{negative->encoder_hidden_states, negative->pooled_projections};
    SD3GenerateRequest r;
    r.batch = cond.batch;
    r.height = o.height;
    r.width = o.width;
    r.text_len = cond.text_len;
    r.cond = &c;
    r.negative = negative ? &n : nullptr;
    r.steps = o.steps;
    r.guidance_scale = o.guidance_scale;
    r.shift = o.shift;
    r.seed = o.seed;
    r.tiling.enabled = o.tiled_decode;
    SD3GenerateTimings t;
    QUILL_ASSIGN_OR_RETURN(Tensor image, sd3_generate(*engine_, *vae_, r, &t));
    Output out;
    out.height = image.dim(2);
    out.width = image.dim(3);
    for (int64_t b = 0; b < image.dim(0); ++b)
      out.rgb.push_back(image_to_u8(image.data_as<float>() + b * 3 * out.height * out.width, 3, out.height, out.width));
    out.denoise_ms = t.denoise_ms;
    out.decode_ms = t.decode_ms;
    return out;
  }

 private:
  std::unique_ptr<ThreadPool> pool_;
  std::unique_ptr<SD3Engine> engine_;
  std::unique_ptr<AutoencoderKL> vae_;
};

}  // namespace

Result<std::unique_ptr<ImageGenerator>> ImageGenerator::open(const std::string& transformer_path,
                                                             const std::string& vae_path, int threads) {
  auto g =
      std::make_unique<SD3ImageGenerator>(std::make_unique<ThreadPool>(threads > 0 ? threads : default_thread_count()));
  QUILL_RETURN_IF_ERROR(g->init(transformer_path, vae_path));
  return std::unique_ptr<ImageGenerator>(std::move(g));
}

}  // namespace quill
