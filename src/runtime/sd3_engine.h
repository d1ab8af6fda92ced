// The SD3 MMDiT behind the compile-once engine.
#pragma once

#include <memory>
#include <string>

#include "models/sd3_mmdit.h"
#include "runtime/engine.h"

namespace quill {

using SD3Engine = Engine<SD3Transformer>;
using SD3Plan = Plan<SD3Transformer>;

inline Result<std::unique_ptr<SD3Engine>> open_sd3_engine(const std::string& model_path, ThreadPool& pool) {
  return open_engine<SD3Transformer>(model_path, pool);
}

}  // namespace quill
