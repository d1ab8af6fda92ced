// Which image generator serves which transformer architecture. A new model family adds one line
// to the table in image_model_registry.cpp and a factory beside its pipeline.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "quill/quill.h"

namespace quill {

using ImageGeneratorFactory = Result<std::unique_ptr<ImageGenerator>> (*)(const ImageGenerator::OpenOptions& options,
                                                                          const std::string& architecture);

struct ImageModelEntry {
  const char* architecture;  // as io/architecture.h detects it
  ImageGeneratorFactory open;
};

const std::vector<ImageModelEntry>& image_model_registry();

// The decoder output [B, 3, H, W] as the API's RGB images (sizes set, timings left to the caller).
ImageGenerator::Output rgb_output(const Tensor& image);

// The factories (one per family).
Result<std::unique_ptr<ImageGenerator>> open_sd3_image_generator(const ImageGenerator::OpenOptions& options,
                                                                 const std::string& architecture);
Result<std::unique_ptr<ImageGenerator>> open_flux2_image_generator(const ImageGenerator::OpenOptions& options,
                                                                   const std::string& architecture);

}  // namespace quill
