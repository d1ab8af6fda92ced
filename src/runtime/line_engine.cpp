#include "runtime/line_engine.h"

namespace quill {

Result<std::unique_ptr<LineEngine>> open_line_engine(const std::string& model_path, ThreadPool& pool) {
  QUILL_ASSIGN_OR_RETURN(auto files, ModelFiles::open(model_path));
  QUILL_ASSIGN_OR_RETURN(auto model, LineModel::load(files));
  return std::make_unique<LineEngine>(std::move(model), pool);
}

}  // namespace quill
