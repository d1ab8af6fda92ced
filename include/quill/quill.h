// Quill's embedding API: what a program (the `quill` CLI, a server, bindings) needs to run the
// models without knowing the engine's internals. Everything here returns Status / Result values.
//   quill/line_studio.h  the handwriting line studio (text + style -> line image)
//   quill/quill.h        images from a diffusion transformer + VAE (this file)
//   quill/device.h       auto | cpu | gpu, chosen the same way for every model
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "quill/device.h"
#include "quill/dtype.h"
#include "quill/line_studio.h"
#include "quill/status.h"
#include "quill/tensor.h"

namespace quill {

const char* version();

// Image generation with a diffusion transformer and its VAE. The transformer's architecture is
// detected from its files (config `_class_name`, GGUF metadata or tensor names) and looked up in
// a registry (src/api/image_model_registry.cpp); today: SD3Transformer2DModel (SD3 / SD3.5) and
// Flux2Transformer2DModel (FLUX.2 [klein] / [dev], with AutoencoderKLFlux2). Conditioning is
// precomputed, or made from text prompts by the model's own text encoder (FLUX.2 [klein]'s Qwen3:
// encode_prompts, generate_from_prompts). Thread-safety: generate() may be called
// from several threads; calls run one at a time.
class ImageGenerator {
 public:
  struct OpenOptions {
    // A diffusers pipeline folder (model_index.json: its transformer/, vae/, text_encoder/ and
    // tokenizer/ are used unless given below), or the transformer alone: folder, .safetensors, .gguf.
    std::string transformer;
    std::string vae;           // AutoencoderKL folder or .safetensors (empty: the pipeline folder's)
    std::string text_encoder;  // for prompts: folder, .safetensors, .gguf (empty: the pipeline folder's, if any)
    std::string tokenizer;     // folder with tokenizer.json, or the file (empty: the pipeline folder's,
                               // else the tokenizer inside a llama.cpp GGUF text encoder)
    int threads = 0;          // <= 0: QUILL_THREADS or all cores
    DeviceChoice device = DeviceChoice::kAuto;
  };
  // What the opened models expect.
  struct Info {
    std::string architecture;  // e.g. "SD3Transformer2DModel"
    int64_t in_channels = 0, joint_attention_dim = 0;
    int64_t pooled_projection_dim = 0;      // 0: the model takes no pooled vector (FLUX.2)
    int64_t vae_scale = 8, patch_size = 2;  // image sides must be multiples of vae_scale * patch_size
    // Initial latents are [B, in_channels, H / latent_scale, W / latent_scale] (SD3: the VAE's
    // latent; FLUX.2: its 2x2-patchified latent, diffusers' `latents=`).
    int64_t latent_scale = 8;
    int64_t default_size = 1024;  // image side when the caller gives none (diffusers' default_sample_size x VAE)
    int default_steps = 28;
    float default_guidance = 7.0f;
    bool guidance_distilled = false;  // guidance is not applied (FLUX.2 klein distilled)
    bool takes_prompts = false;       // a text encoder and tokenizer are loaded: encode_prompts() works
    std::string defaults_source;      // where the defaults and the mode come from, for messages
    std::string device;               // "cpu", "cuda (per-op CPU fallback)", ...
  };
  struct Conditioning {
    std::vector<float> encoder_hidden_states;  // [B, T, joint_attention_dim] (FLUX.2: prompt_embeds)
    std::vector<float> pooled_projections;     // [B, pooled_projection_dim]; empty when that is 0
    int64_t batch = 1, text_len = 0;
  };
  struct Options {
    int64_t width = 1024, height = 1024;
    int steps = 0;                 // <= 0: info().default_steps
    float guidance_scale = -1.0f;  // < 0: info().default_guidance; <= 1: no guidance (batch B); else CFG
                                   // (one forward of batch 2B per step when the texts have one length)
    double shift = 3.0;            // SD3's static shift; FLUX.2 shifts by its empirical mu instead
    uint64_t seed = 0;
    bool tiled_decode = false;
    std::vector<float> initial_latents;  // [B, C, H / vae_scale, W / vae_scale]; empty: seeded noise
    std::function<void(int step, int steps)> on_step;
    const std::atomic<bool>* cancel = nullptr;  // set it from another thread to stop (kCancelled)
  };
  struct Output {
    std::vector<std::vector<uint8_t>> rgb;  // one interleaved RGB image per batch item
    int64_t width = 0, height = 0;
    double denoise_ms = 0, decode_ms = 0;
    uint64_t plan_builds = 0;  // over the generator's life
  };

  static Result<std::unique_ptr<ImageGenerator>> open(const OpenOptions& options);
  // `threads` <= 0: QUILL_THREADS or all cores.
  static Result<std::unique_ptr<ImageGenerator>> open(const std::string& transformer_path, const std::string& vae_path,
                                                      int threads = 0);
  // Architectures open() accepts.
  static std::vector<std::string> architectures();

  virtual ~ImageGenerator() = default;
  virtual const Info& info() const = 0;
  virtual Result<Output> generate(const Conditioning& cond, const Conditioning* negative, const Options& options) = 0;
  // Text prompts -> conditioning with the model's own text encoder (FLUX.2 [klein]: Qwen3; the
  // empty prompt's embedding, the usual negative, is computed once and kept). kUnsupported when
  // info().takes_prompts is false.
  virtual Result<Conditioning> encode_prompts(const std::vector<std::string>& prompts) {
    (void)prompts;
    return unsupported(info().architecture, ": no text encoder loaded; pass precomputed conditioning");
  }
  // Prompts in, images out: encode_prompts(prompts), and when guidance applies the negatives (one
  // per prompt; none given = the empty prompt, as diffusers), then generate().
  Result<Output> generate_from_prompts(const std::vector<std::string>& prompts, const Options& options,
                                       const std::vector<std::string>& negative_prompts = {});
  // Ops run per kind and device (transformer and VAE), for --diag.
  virtual std::string op_counts() const = 0;
};

// Conditioning and latents stored in safetensors files, as `quill generate --cond/--negative/
// --latents` and `quill.ImagePipeline` read them. SD3 takes encoder_hidden_states [B, T, J] and
// pooled_projections [B, P]; FLUX.2 (no pooled vector) takes prompt_embeds [B, T, J] (diffusers'
// name; encoder_hidden_states is accepted too). `negative` reads the negative_* tensors of a file
// that holds both (diffusers' prompt_embeds files do).
Result<ImageGenerator::Conditioning> read_conditioning_file(const std::string& path, const ImageGenerator::Info& info,
                                                            bool negative = false);
// Whether `path` holds negative_prompt_embeds / negative_encoder_hidden_states beside the positive ones.
bool conditioning_file_has_negative(const std::string& path);
// The tensor `latents` of `path`, which must have exactly `shape`.
Result<std::vector<float>> read_latents_file(const std::string& path, const std::vector<int64_t>& shape);

// PNG bytes of 8-bit pixels (gray, gray+alpha, RGB or RGBA by `channels`, rows top to bottom):
// what `quill line`, `quill serve` and `quill.encode_png` write.
Result<std::vector<uint8_t>> encode_png(const uint8_t* pixels, int width, int height, int channels);

}  // namespace quill
