// Quill's embedding API: what a program (the `quill` CLI, a server, bindings) needs to run the
// models without knowing the engine's internals. Everything here returns Status / Result values.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "quill/dtype.h"
#include "quill/status.h"
#include "quill/tensor.h"

namespace quill {

const char* version();

// Text-to-image with an SD3-class transformer and an AutoencoderKL, from precomputed conditioning.
class ImageGenerator {
 public:
  struct Conditioning {
    std::vector<float> encoder_hidden_states;  // [B, T, joint_attention_dim]
    std::vector<float> pooled_projections;     // [B, pooled_projection_dim]
    int64_t batch = 1, text_len = 0;
  };
  struct Options {
    int64_t width = 1024, height = 1024;
    int steps = 28;
    float guidance_scale = 7.0f;  // <= 1: no guidance (batch B); else one forward of batch 2B per step
    double shift = 3.0;
    uint64_t seed = 0;
    bool tiled_decode = false;
  };
  struct Output {
    std::vector<std::vector<uint8_t>> rgb;  // one interleaved RGB image per batch item
    int64_t width = 0, height = 0;
    double denoise_ms = 0, decode_ms = 0;
  };

  // `threads` <= 0: QUILL_THREADS or all cores.
  static Result<std::unique_ptr<ImageGenerator>> open(const std::string& transformer_path, const std::string& vae_path,
                                                      int threads = 0);
  virtual ~ImageGenerator() = default;
  virtual Result<Output> generate(const Conditioning& cond, const Conditioning* negative, const Options& options) = 0;
};

}  // namespace quill
