// The server's line scheduler: a bounded queue of line jobs and one worker per executor (a
// LineStudio with its own threads and plans; `quill serve --executors N`) that runs them.
// Micro-batching: a free worker takes the oldest job, waits until it has been queued
// `batch_window` (or until `max_batch` jobs that can share its forward are queued: same width
// bucket and sampling settings), then samples them as one batch in the plan of `max_batch` lines,
// so concurrent users share forwards. A job cancelled while queued frees its slot at once; one
// cancelled while its batch runs is dropped from the results (the batch stops early only when
// every row is cancelled). A failed batch fails its own jobs only. Finished jobs are kept for
// `keep_for` and at most `keep_finished` of them.
#pragma once

#include <chrono>
#include <condition_variable>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "quill/line_studio.h"
#include "serve/job.h"
#include "serve/metrics.h"

namespace quill::serve {

struct SchedulerOptions {
  int max_queue = 64;  // queued lines (running ones not counted)
  int max_batch = 8;   // 1: no micro-batching
  bool ragged = true;
  double max_pad_ratio = 1.5;  // widest / narrowest row of a ragged batch
  // Ragged batches run at the next multiple of plan_step (canvas pixels, capped at max_width), so
  // the server keeps max_width / plan_step plans instead of one per 16-pixel bucket.
  int64_t plan_step = 64, max_width = 1024;
  std::chrono::milliseconds batch_window{25};
  int keep_finished = 1000;
  std::chrono::seconds keep_for{600};
};

enum class SubmitResult { kQueued, kQueueFull, kShuttingDown };

class LineScheduler {
 public:
  // `executors`: at least one; each runs one batch at a time, all take from the one queue.
  LineScheduler(std::vector<LineStudio*> executors, Metrics& metrics, SchedulerOptions options);
  LineScheduler(LineStudio& studio, Metrics& metrics, SchedulerOptions options)
      : LineScheduler(std::vector<LineStudio*>{&studio}, metrics, options) {}
  ~LineScheduler();
  LineScheduler(const LineScheduler&) = delete;
  LineScheduler& operator=(const LineScheduler&) = delete;

  // `tracked`: kept after it ends so GET /v1/jobs/{id} finds it (async jobs); a synchronous
  // request's job is only known to the caller that waits for it.
  SubmitResult submit(LineJobSpec spec, bool tracked, std::shared_ptr<Job>* job);
  std::shared_ptr<Job> find(const std::string& id) const;
  // Cancels a queued or running job; false when it is unknown or already ended.
  bool cancel(const std::shared_ptr<Job>& job, const std::string& reason);
  int queue_depth() const;
  size_t jobs_kept() const;
  // Seconds a new line would likely wait, from recent batch times (for Retry-After).
  int retry_after_seconds() const;

  // Stops accepting, cancels every queued job (reported as cancelled: "server shutting down"),
  // lets the running batches finish (cancelling them after `grace`), and joins the workers.
  void shutdown(std::chrono::milliseconds grace);

 private:
  void run(LineStudio& studio);
  void run_batch(LineStudio& studio, std::vector<std::shared_ptr<Job>> batch);
  void renumber();  // queue positions, under mu_
  void expire_finished();  // under mu_
  std::string new_id();

  const std::vector<LineStudio*> executors_;
  Metrics& metrics_;
  const SchedulerOptions o_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::shared_ptr<Job>> queue_;
  std::map<std::string, std::shared_ptr<Job>> tracked_;
  std::deque<std::shared_ptr<Job>> finished_;  // tracked jobs that ended, oldest first
  int running_batches_ = 0;
  std::atomic<bool> abort_running_{false};
  bool stopping_ = false;
  double batch_seconds_ = 1.0;  // moving average of one batch's time (on one executor)
  std::mt19937_64 rng_{std::random_device{}()};
  std::vector<std::thread> workers_;
};

}  // namespace quill::serve
