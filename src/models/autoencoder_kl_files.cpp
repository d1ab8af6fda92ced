// AutoencoderKL from ModelFiles (a diffusers folder, safetensors or GGUF). Separate from the rest
// of the loader so programs that build the VAE from memory don't link the file readers.
#include "io/model_files.h"
#include "models/autoencoder_kl.h"

namespace quill {

Result<std::unique_ptr<AutoencoderKL>> AutoencoderKL::load(const ModelFiles& files) {
  if (!files.has_config())
    return invalid_file("AutoencoderKL needs a config.json (block_out_channels, latent_channels, ...)")
        .with_file(files.path());
  auto cfg = AutoencoderKLConfig::from_json(files.config());
  if (!cfg.is_ok()) return cfg.take_status().with_file(files.path());
  const VaeWeightSource src = [&files](const std::string& name, const Shape&) -> Result<Tensor> {
    return files.get(name);
  };
  auto m = load(*cfg, src, files.has("encoder.conv_in.weight"));
  if (!m.is_ok()) return m.take_status().with_file(files.path());
  return m;
}

}  // namespace quill
