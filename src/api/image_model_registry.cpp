#include "api/image_model_registry.h"

#include <filesystem>

#include "core/thread_pool.h"
#include "io/architecture.h"
#include "io/model_files.h"
#include "pipeline/image_postprocess.h"

namespace quill {

const std::vector<ImageModelEntry>& image_model_registry() {
  static const std::vector<ImageModelEntry> table = {
      {"SD3Transformer2DModel", &open_sd3_image_generator},
      {"Flux2Transformer2DModel", &open_flux2_image_generator},
  };
  return table;
}

std::vector<std::string> ImageGenerator::architectures() {
  std::vector<std::string> names;
  for (const auto& e : image_model_registry()) names.push_back(e.architecture);
  return names;
}

ImageGenerator::Output rgb_output(const Tensor& image) {
  ImageGenerator::Output out;
  out.height = image.dim(2);
  out.width = image.dim(3);
  for (int64_t b = 0; b < image.dim(0); ++b)
    out.rgb.push_back(image_to_u8(image.data_as<float>() + b * 3 * out.height * out.width, 3, out.height, out.width));
  return out;
}

namespace {

// A diffusers pipeline folder (model_index.json) stands for its parts: transformer/, vae/,
// text_encoder/, tokenizer/, each used unless the caller named one.
ImageGenerator::OpenOptions resolve_pipeline_folder(ImageGenerator::OpenOptions o) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::path root(o.transformer);
  if (!fs::is_directory(root, ec) || !fs::is_regular_file(root / "model_index.json", ec)) return o;
  auto part = [&](std::string& field, const char* name) {
    if (field.empty() && fs::is_directory(root / name, ec)) field = (root / name).string();
  };
  o.transformer = (root / "transformer").string();
  part(o.vae, "vae");
  part(o.text_encoder, "text_encoder");
  part(o.tokenizer, "tokenizer");
  return o;
}

}  // namespace

Result<std::unique_ptr<ImageGenerator>> ImageGenerator::open(const OpenOptions& given) {
  const OpenOptions options = resolve_pipeline_folder(given);
  std::error_code ec;
  if (!std::filesystem::exists(options.transformer, ec))
    return not_found("no such model file or folder").with_file(options.transformer);
  if (options.vae.empty())
    return invalid_argument("no VAE: give one, or a diffusers pipeline folder with a vae/ folder")
        .with_file(options.transformer);
  QUILL_ASSIGN_OR_RETURN(auto files, ModelFiles::open(options.transformer));
  const ArchitectureGuess arch = detect_architecture(*files);
  for (const auto& e : image_model_registry())
    if (arch.name == e.architecture) return e.open(options, arch.name);
  std::string known;
  for (const auto& e : image_model_registry()) known += str_cat(known.empty() ? "" : ", ", e.architecture);
  return unsupported("no image pipeline for architecture '", arch.name, "' (detected from ", arch.source,
                     "); supported: ", known)
      .with_file(options.transformer);
}

Result<std::unique_ptr<ImageGenerator>> ImageGenerator::open(const std::string& transformer_path,
                                                             const std::string& vae_path, int threads) {
  OpenOptions o;
  o.transformer = transformer_path;
  o.vae = vae_path;
  o.threads = threads;
  return open(o);
}

Result<ImageGenerator::Output> ImageGenerator::generate_from_prompts(const std::vector<std::string>& prompts,
                                                                    const Options& options,
                                                                    const std::vector<std::string>& negative_prompts) {
  if (prompts.empty()) return invalid_argument("no prompts");
  if (!negative_prompts.empty() && negative_prompts.size() != prompts.size())
    return invalid_argument("negative prompts: give one per prompt or none (got ", negative_prompts.size(), " for ",
                            prompts.size(), " prompts)");
  const float cfg = options.guidance_scale >= 0.0f ? options.guidance_scale : info().default_guidance;
  const bool guided = cfg > 1.0f && !info().guidance_distilled;
  QUILL_ASSIGN_OR_RETURN(Conditioning cond, encode_prompts(prompts));
  if (!guided) return generate(cond, nullptr, options);
  const std::vector<std::string> negatives =
      negative_prompts.empty() ? std::vector<std::string>(prompts.size()) : negative_prompts;
  QUILL_ASSIGN_OR_RETURN(Conditioning negative, encode_prompts(negatives));
  return generate(cond, &negative, options);
}

}  // namespace quill
