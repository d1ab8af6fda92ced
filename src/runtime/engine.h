// A model ready to serve: weights mapped once, one plan (arena + buffers) per shape bucket, built
// on first use or ahead by warm_up(), and forwards that allocate nothing.
//
// `Model` provides: `using Bucket`, `using Buffers`, `Status validate(const Bucket&) const`,
// `size_t layout(const Bucket&, const ThreadPool&, Arena*, Buffers*) const` (null arena = size
// only), and `Status forward(const Bucket&, inputs..., Buffers&, Dispatcher&) const`.
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "core/arena.h"
#include "core/log.h"
#include "io/model_files.h"
#include "runtime/dispatcher.h"
#include "runtime/plan_cache.h"

namespace quill {

template <typename Model>
struct Plan {
  typename Model::Bucket bucket;
  Arena arena;
  typename Model::Buffers buffers;
  size_t arena_bytes = 0;
  double build_ms = 0;  // set by the cache
};

template <typename Model>
class Engine {
 public:
  using Bucket = typename Model::Bucket;

  // `pool` must outlive the engine.
  Engine(std::unique_ptr<Model> model, ThreadPool& pool)
      : model_(std::move(model)),
        pool_(pool),
        cpu_(make_cpu_backend(pool)),
        ops_(cpu_.get()),
        plans_([this](const Bucket& b) { return build_plan(b); }) {}

  const Model& model() const { return *model_; }
  Result<Plan<Model>*> plan(const Bucket& bucket) { return plans_.get(bucket); }
  // Builds the plans for `buckets`; `commit`: their memory made resident now (Arena::commit).
  Status warm_up(const std::vector<Bucket>& buckets, bool commit = false) {
    for (const auto& b : buckets) {
      QUILL_ASSIGN_OR_RETURN(Plan<Model> * p, plans_.get(b));
      if (commit) p->arena.commit();
    }
    return Status::ok();
  }
  PlanCacheStats plan_stats() const { return plans_.stats(); }
  size_t plan_count() const { return plans_.size(); }

  // Runs the model's forward on the bucket's plan (built if needed).
  template <typename... Args>
  Status forward(const Bucket& bucket, Args&&... args) {
    QUILL_ASSIGN_OR_RETURN(Plan<Model> * p, plans_.get(bucket));
    return model_->forward(bucket, std::forward<Args>(args)..., p->buffers, ops_);
  }

  // Runs `bucket` on the plan of `plan_bucket`: the same shape with a batch at least as large
  // (Model::runs_in says which buckets fit), so one plan per shape serves every smaller batch and
  // a long request does not build a plan per leftover batch size.
  template <typename... Args>
  Status forward_in(const Bucket& plan_bucket, const Bucket& bucket, Args&&... args) {
    if (!model_->runs_in(plan_bucket, bucket))
      return internal_error("bucket ", bucket.to_string(), " does not fit the plan of ", plan_bucket.to_string());
    QUILL_RETURN_IF_ERROR(model_->validate(bucket));
    QUILL_ASSIGN_OR_RETURN(Plan<Model> * p, plans_.get(plan_bucket));
    return model_->forward(bucket, std::forward<Args>(args)..., p->buffers, ops_);
  }

  Dispatcher& ops() { return ops_; }
  ThreadPool& pool() { return pool_; }
  // Install an accelerator backend (or a test double) in front of the CPU.
  void set_primary_backend(OpBackend* primary) { ops_.set_primary(primary); }

 private:
  Result<std::unique_ptr<Plan<Model>>> build_plan(const Bucket& bucket) {
    QUILL_RETURN_IF_ERROR(model_->validate(bucket));
    auto p = std::make_unique<Plan<Model>>();
    p->bucket = bucket;
    const size_t bytes = model_->layout(bucket, pool_, nullptr, nullptr);
    p->arena.reserve(bytes);
    model_->layout(bucket, pool_, &p->arena, &p->buffers);
    p->arena_bytes = bytes;
    log_info("plan built for ", bucket.to_string(), ": arena ", double(bytes) / (1024.0 * 1024.0), " MiB");
    return p;
  }

  std::unique_ptr<Model> model_;
  ThreadPool& pool_;
  std::unique_ptr<OpBackend> cpu_;
  Dispatcher ops_;
  PlanCache<Bucket, Plan<Model>> plans_;
};

// Opens `model_path` (anything ModelFiles reads) as a `Model` behind a fresh engine.
template <typename Model>
Result<std::unique_ptr<Engine<Model>>> open_engine(const std::string& model_path, ThreadPool& pool) {
  QUILL_ASSIGN_OR_RETURN(auto files, ModelFiles::open(model_path));
  QUILL_ASSIGN_OR_RETURN(auto model, Model::load(files));
  return std::make_unique<Engine<Model>>(std::move(model), pool);
}

}  // namespace quill
