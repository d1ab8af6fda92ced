// Which model a set of weights is, for `quill info` and for picking a model class: from the
// config (`_class_name` in diffusers, `architectures` in transformers, GGUF general.architecture),
// failing that from tensor-name patterns.
#pragma once

#include <string>

#include "io/model_files.h"

namespace quill {

struct ArchitectureGuess {
  std::string name;    // diffusers/transformers class name, e.g. "SD3Transformer2DModel"; "unknown"
  std::string source;  // how it was found: "config _class_name", "tensor names", ...
};

ArchitectureGuess detect_architecture(const ModelFiles& files);

}  // namespace quill
