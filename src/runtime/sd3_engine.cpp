#include "runtime/sd3_engine.h"

namespace quill {

Result<std::unique_ptr<SD3Engine>> open_sd3_engine(const std::string& model_path, ThreadPool& pool) {
  QUILL_ASSIGN_OR_RETURN(auto files, ModelFiles::open(model_path));
  QUILL_ASSIGN_OR_RETURN(auto model, SD3Transformer::load(files));
  return std::make_unique<SD3Engine>(std::move(model), pool);
}

}  // namespace quill
