#include "runtime/sd3_engine.h"

#include "core/log.h"

namespace quill {

SD3Engine::SD3Engine(std::unique_ptr<SD3Transformer> model, ThreadPool& pool)
    : model_(std::move(model)),
      pool_(pool),
      cpu_(pool),
      ops_(&cpu_),
      plans_([this](const SD3Bucket& b) { return build_plan(b); }) {}

Result<std::unique_ptr<SD3Engine>> SD3Engine::open(const std::string& model_path, ThreadPool& pool) {
  QUILL_ASSIGN_OR_RETURN(auto files, ModelFiles::open(model_path));
  QUILL_ASSIGN_OR_RETURN(auto model, SD3Transformer::load(files));
  return create(std::move(model), pool);
}

Result<std::unique_ptr<SD3Engine>> SD3Engine::create(std::unique_ptr<SD3Transformer> model, ThreadPool& pool) {
  return std::unique_ptr<SD3Engine>(new SD3Engine(std::move(model), pool));
}

Result<std::unique_ptr<SD3Plan>> SD3Engine::build_plan(const SD3Bucket& bucket) {
  QUILL_RETURN_IF_ERROR(model_->validate(bucket));
  auto plan = std::make_unique<SD3Plan>();
  plan->bucket = bucket;
  const size_t bytes = model_->layout(bucket, pool_, nullptr, nullptr);
  plan->arena.reserve(bytes);
  model_->layout(bucket, pool_, &plan->arena, &plan->buffers);
  plan->arena_bytes = bytes;
  log_info("plan built for ", bucket.to_string(), ": arena ", bytes / (1024.0 * 1024.0), " MiB");
  return plan;
}

Status SD3Engine::warm_up(const std::vector<SD3Bucket>& buckets) {
  for (const auto& b : buckets) {
    QUILL_ASSIGN_OR_RETURN(SD3Plan * p, plans_.get(b));
    (void)p;
  }
  return Status::ok();
}

Status SD3Engine::forward(const SD3Bucket& bucket, const float* hidden_states, const float* encoder_hidden_states,
                          const float* pooled_projections, const float* timestep, float* sample) {
  QUILL_ASSIGN_OR_RETURN(SD3Plan * plan, plans_.get(bucket));
  return model_->forward(bucket, hidden_states, encoder_hidden_states, pooled_projections, timestep, sample,
                         plan->buffers, ops_);
}

}  // namespace quill
