// FLUX.2 weights by their diffusers names, from diffusers-named files (folders, safetensors, Quill
// GGUF) or from Black Forest Labs' checkpoints (`flux-2-klein-4b.safetensors`, optionally under
// `model.diffusion_model.`): there q/k/v of each double-block stream are one fused `qkv` weight
// (served here as zero-copy row views), the q/k norms end in `.scale`, and the final adaLN
// modulation is stored (shift, scale) where diffusers has (scale, shift). The mapping mirrors
// diffusers' convert_flux2_transformer_checkpoint_to_diffusers.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "io/model_files.h"
#include "models/weights.h"

namespace quill {

class Flux2WeightReader {
 public:
  // Detects the naming from the tensors present.
  explicit Flux2WeightReader(const ModelFiles& files);

  bool bfl_names() const { return bfl_; }
  // BFL stores norm_out's modulation as (shift, scale); diffusers as (scale, shift).
  bool norm_out_shift_first() const { return bfl_; }

  // `name` is the diffusers module name ("transformer_blocks.0.attn.to_q"); bias-free Linear.
  Result<Linear> linear(const std::string& name, int64_t in, int64_t out) const;
  // A norm weight by its diffusers module name ("transformer_blocks.0.attn.norm_q"), as f32.
  Result<std::vector<float>> norm(const std::string& name, int64_t dim) const;
  bool has_linear(const std::string& name) const;

  // A BFL checkpoint ships no config.json: the Flux2Transformer2DModel config its shapes imply
  // (layer counts, widths, heads from the q norm, guidance embedder present or not; RoPE: four
  // equal axes of head_dim / 4, theta 2000, as every FLUX.2 release).
  Result<nlohmann::json> infer_config() const;

 private:
  struct Source {
    std::string name;  // in the files
    int part = -1;     // third of a fused qkv weight, -1 for the whole tensor
  };
  Source source(const std::string& diffusers_name) const;

  const ModelFiles& files_;
  bool bfl_ = false;
  std::string prefix_;  // "model.diffusion_model." or ""
};

}  // namespace quill
