// Compile-once plans: a plan is built the first time a shape bucket is asked for and reused by
// every later request in that bucket. Counts builds and hits so tests and benchmarks can prove it.
#pragma once

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <mutex>

#include "quill/status.h"

namespace quill {

struct PlanCacheStats {
  uint64_t builds = 0, hits = 0;
  double build_ms_total = 0;
};

template <typename Bucket, typename Plan>
class PlanCache {
 public:
  using Builder = std::function<Result<std::unique_ptr<Plan>>(const Bucket&)>;
  explicit PlanCache(Builder builder) : builder_(std::move(builder)) {}

  // The plan for `bucket`, built on first use. Plans are never evicted, so pointers stay valid.
  Result<Plan*> get(const Bucket& bucket) {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = plans_.find(bucket);
    if (it != plans_.end()) {
      stats_.hits++;
      return it->second.get();
    }
    const auto t0 = std::chrono::steady_clock::now();
    QUILL_ASSIGN_OR_RETURN(std::unique_ptr<Plan> plan, builder_(bucket));
    const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    plan->build_ms = ms;
    stats_.builds++;
    stats_.build_ms_total += ms;
    Plan* raw = plan.get();
    plans_.emplace(bucket, std::move(plan));
    return raw;
  }

  bool contains(const Bucket& bucket) const {
    std::lock_guard<std::mutex> lock(mu_);
    return plans_.count(bucket) != 0;
  }
  size_t size() const {
    std::lock_guard<std::mutex> lock(mu_);
    return plans_.size();
  }
  PlanCacheStats stats() const {
    std::lock_guard<std::mutex> lock(mu_);
    return stats_;
  }

 private:
  Builder builder_;
  mutable std::mutex mu_;
  std::map<Bucket, std::unique_ptr<Plan>> plans_;
  PlanCacheStats stats_;
};

}  // namespace quill
