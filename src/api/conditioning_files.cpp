// Conditioning / latents files for ImageGenerator (the `--cond`, `--negative`, `--latents` of
// `quill generate`, and ImagePipeline's paths in Python), and the public PNG encoder.
#include "io/image.h"
#include "io/safetensors.h"
#include "quill/quill.h"

namespace quill {

Result<ImageGenerator::Conditioning> read_conditioning_file(const std::string& path, const ImageGenerator::Info& info,
                                                            bool negative) {
  const std::string prefix = negative ? "negative_" : "";
  QUILL_ASSIGN_OR_RETURN(auto f, SafetensorsFile::open(path));
  const bool pooled = info.pooled_projection_dim > 0;
  std::string text_name = prefix + "encoder_hidden_states";
  if (!pooled && !f->find(text_name) && f->find(prefix + "prompt_embeds")) text_name = prefix + "prompt_embeds";
  if (!f->find(text_name))
    return invalid_argument("missing tensor '", text_name, "'; a conditioning file holds ",
                            pooled ? str_cat("encoder_hidden_states [B, T, ", info.joint_attention_dim,
                                             "] and pooled_projections [B, ", info.pooled_projection_dim, "]")
                                   : str_cat("prompt_embeds [B, T, ", info.joint_attention_dim, "] (",
                                             info.architecture, " takes no pooled vector)"))
        .with_file(path);
  QUILL_ASSIGN_OR_RETURN(Tensor e, f->tensor(text_name));
  if (e.rank() != 3 || e.dim(2) != info.joint_attention_dim || !dtype_traits(e.dtype()).is_float)
    return invalid_argument("wrong shape or dtype")
        .with_tensor(text_name)
        .with_file(path)
        .with_expected_found(str_cat("float [B, T, ", info.joint_attention_dim, "]"), e.describe());
  std::vector<float> pooled_values;
  if (pooled) {
    const std::string pooled_name = prefix + "pooled_projections";
    if (!f->find(pooled_name))
      return invalid_argument("missing tensor '", pooled_name, "'; a conditioning file holds encoder_hidden_states [B, T, ",
                              info.joint_attention_dim, "] and pooled_projections [B, ", info.pooled_projection_dim,
                              "]")
          .with_file(path);
    QUILL_ASSIGN_OR_RETURN(Tensor p, f->tensor(pooled_name));
    if (p.rank() != 2 || p.dim(0) != e.dim(0) || p.dim(1) != info.pooled_projection_dim ||
        !dtype_traits(p.dtype()).is_float)
      return invalid_argument("wrong shape or dtype")
          .with_tensor(pooled_name)
          .with_file(path)
          .with_expected_found(str_cat("float [", e.dim(0), ", ", info.pooled_projection_dim, "]"), p.describe());
    pooled_values = p.to_f32_vector();
  }
  return ImageGenerator::Conditioning{e.to_f32_vector(), std::move(pooled_values), e.dim(0), e.dim(1)};
}

bool conditioning_file_has_negative(const std::string& path) {
  auto f = SafetensorsFile::open(path);
  return f && ((*f)->find("negative_prompt_embeds") || (*f)->find("negative_encoder_hidden_states"));
}

Result<std::vector<float>> read_latents_file(const std::string& path, const std::vector<int64_t>& shape) {
  QUILL_ASSIGN_OR_RETURN(auto lf, SafetensorsFile::open(path));
  QUILL_ASSIGN_OR_RETURN(Tensor lt, lf->tensor("latents"));
  const Shape want(shape);
  if (lt.shape() != want)
    return invalid_argument("wrong shape")
        .with_tensor("latents")
        .with_file(path)
        .with_expected_found(want.to_string(), lt.shape().to_string());
  return lt.to_f32_vector();
}

Result<std::vector<uint8_t>> encode_png(const uint8_t* pixels, int width, int height, int channels) {
  if (channels < 1 || channels > 4) return invalid_argument("PNG channels must be 1..4, got ", channels);
  QUILL_RETURN_IF_ERROR(check_image_size(width, height, "PNG"));
  const size_t n = size_t(width) * size_t(height) * size_t(channels);
  return encode_png(Image{width, height, channels, std::vector<uint8_t>(pixels, pixels + n)});
}

}  // namespace quill
