// The handwriting line model behind the compile-once engine: one plan per (batch, width) bucket.
#pragma once

#include <memory>
#include <string>

#include "models/line_model.h"
#include "runtime/engine.h"

namespace quill {

using LineEngine = Engine<LineModel>;

inline Result<std::unique_ptr<LineEngine>> open_line_engine(const std::string& model_path, ThreadPool& pool) {
  return open_engine<LineModel>(model_path, pool);
}

}  // namespace quill
