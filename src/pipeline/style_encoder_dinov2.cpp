#include "pipeline/style_encoder_dinov2.h"

#include <sys/stat.h>

#include "io/image.h"

namespace quill {

Result<std::unique_ptr<StyleEncoder>> Dinov2StyleEncoder::open_if_present(const std::string& model_dir,
                                                                          ThreadPool& pool) {
  const std::string dir = model_dir + "/style_encoder";
  struct stat sb {};
  if (::stat((dir + "/config.json").c_str(), &sb) != 0) return std::unique_ptr<StyleEncoder>();
  QUILL_ASSIGN_OR_RETURN(auto files, ModelFiles::open(dir));
  auto enc = std::make_unique<Dinov2StyleEncoder>();
  QUILL_ASSIGN_OR_RETURN(enc->encoder_, Dinov2Encoder::load(files, pool));
  return std::unique_ptr<StyleEncoder>(std::move(enc));
}

Result<int> Dinov2StyleEncoder::square_size() const {
  const int size = int(encoder_->config().image_h);  // square references; the config may say otherwise
  if (encoder_->config().image_w != size)
    return unsupported("style encoders with non-square image size (", encoder_->config().image_h, "x",
                       encoder_->config().image_w, ") are not supported");
  return size;
}

Result<std::vector<float>> Dinov2StyleEncoder::embed_pixels(const Tensor& pixels) {
  std::vector<float> pooled(static_cast<size_t>(encoder_->hidden_size()));
  QUILL_RETURN_IF_ERROR(encoder_->encode(pixels.reshape({1, 3, pixels.dim(1), pixels.dim(2)}), pooled.data()));
  return pooled;
}

Result<std::vector<float>> Dinov2StyleEncoder::embed(const std::string& image_path) {
  QUILL_ASSIGN_OR_RETURN(int size, square_size());
  QUILL_ASSIGN_OR_RETURN(Tensor pixels, load_style_reference(image_path, size));
  return embed_pixels(pixels);
}

Result<std::vector<float>> Dinov2StyleEncoder::embed_image(const Image& image) {
  QUILL_ASSIGN_OR_RETURN(int size, square_size());
  QUILL_ASSIGN_OR_RETURN(Tensor pixels, style_reference_from_image(image, size));
  return embed_pixels(pixels);
}

}  // namespace quill
