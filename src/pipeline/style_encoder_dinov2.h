// The line model's style encoder: a Dinov2-architecture ViT (transformers' Dinov2Model) over the
// style reference laid out in its square image (style_encoder/style_layout.json: squashed, or wrapped
// at writing size) and ImageNet-normalised; the embedding is the pooled (layer-normed CLS) output.
// Lives in <line model>/style_encoder/.
#pragma once

#include <memory>
#include <string>

#include "io/image.h"
#include "models/dinov2.h"
#include "pipeline/line_pipeline.h"

namespace quill {

class Dinov2StyleEncoder final : public StyleEncoder {
 public:
  // Null (and ok) when `<model_dir>/style_encoder/config.json` does not exist.
  static Result<std::unique_ptr<StyleEncoder>> open_if_present(const std::string& model_dir, ThreadPool& pool);
  Result<std::vector<float>> embed(const std::string& image_path) override;
  Result<std::vector<float>> embed_image(const Image& image) override;
  Dispatcher& ops() override { return encoder_->engine().ops(); }

 private:
  Result<int> square_size() const;
  Result<std::vector<float>> embed_pixels(const Tensor& pixels);
  std::unique_ptr<Dinov2Encoder> encoder_;
  StyleLayout layout_;
};

}  // namespace quill
