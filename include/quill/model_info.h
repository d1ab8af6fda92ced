// What a model file or folder holds, as `quill info --json` prints it and `quill.info()` returns it.
#pragma once

#include <string>

#include "quill/status.h"

namespace quill {

// One JSON object: path, format, files, architecture {name, source}, config_path, config (long
// arrays summarised), tensor_count, parameters, bytes, dtypes {name: {tensors, parameters, bytes}},
// and with `list_tensors` tensors [{name, dtype, shape, file}]. `path`: a diffusers/transformers
// folder, .safetensors, .safetensors.index.json or .gguf.
Result<std::string> describe_model_json(const std::string& path, bool list_tensors = false);

}  // namespace quill
