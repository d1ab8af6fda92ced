// An SD3 MMDiT ready to serve: weights mapped once, one plan (arena + op choices) per shape
// bucket, built on first use or ahead by warm_up(), and a forward that allocates nothing.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "core/arena.h"
#include "models/sd3_mmdit.h"
#include "runtime/op_backend.h"
#include "runtime/plan_cache.h"

namespace quill {

struct SD3Plan {
  SD3Bucket bucket;
  Arena arena;
  SD3Buffers buffers;
  size_t arena_bytes = 0;
  double build_ms = 0;  // set by the cache
};

class SD3Engine {
 public:
  // `pool` must outlive the engine.
  static Result<std::unique_ptr<SD3Engine>> open(const std::string& model_path, ThreadPool& pool);
  static Result<std::unique_ptr<SD3Engine>> create(std::unique_ptr<SD3Transformer> model, ThreadPool& pool);

  const SD3Transformer& model() const { return *model_; }
  Result<SD3Plan*> plan(const SD3Bucket& bucket) { return plans_.get(bucket); }
  Status warm_up(const std::vector<SD3Bucket>& buckets);
  PlanCacheStats plan_stats() const { return plans_.stats(); }

  // Inputs f32, shapes from the bucket: hidden_states [B,C,H,W], encoder_hidden_states [B,T,J],
  // pooled_projections [B,P], timestep [B]; sample [B,Cout,H,W].
  Status forward(const SD3Bucket& bucket, const float* hidden_states, const float* encoder_hidden_states,
                 const float* pooled_projections, const float* timestep, float* sample);

  Dispatcher& ops() { return ops_; }
  // Install an accelerator backend (or a test double) in front of the CPU.
  void set_primary_backend(OpBackend* primary) { ops_.set_primary(primary); }

 private:
  SD3Engine(std::unique_ptr<SD3Transformer> model, ThreadPool& pool);
  Result<std::unique_ptr<SD3Plan>> build_plan(const SD3Bucket& bucket);

  std::unique_ptr<SD3Transformer> model_;
  ThreadPool& pool_;
  CpuBackend cpu_;
  Dispatcher ops_;
  PlanCache<SD3Bucket, SD3Plan> plans_;
};

}  // namespace quill
