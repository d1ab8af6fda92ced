#include "serve/scheduler.h"

#include <algorithm>
#include <cmath>

#include "io/image.h"

namespace quill::serve {

LineScheduler::LineScheduler(std::vector<LineStudio*> executors, Metrics& metrics, SchedulerOptions options)
    : executors_(std::move(executors)), metrics_(metrics), o_(options) {
  for (LineStudio* studio : executors_) workers_.emplace_back([this, studio] { run(*studio); });
}

LineScheduler::~LineScheduler() { shutdown(std::chrono::milliseconds(0)); }

std::string LineScheduler::new_id() {
  static const char* hex = "0123456789abcdef";
  std::string id;
  for (int part = 0; part < 2; ++part) {
    uint64_t v = rng_();
    for (int i = 0; i < 16; ++i, v >>= 4) id.push_back(hex[v & 15]);
  }
  return id;
}

SubmitResult LineScheduler::submit(LineJobSpec spec, bool tracked, std::shared_ptr<Job>* job) {
  std::lock_guard<std::mutex> lock(mu_);
  if (stopping_) return SubmitResult::kShuttingDown;
  if (int(queue_.size()) >= o_.max_queue) return SubmitResult::kQueueFull;
  auto j = std::make_shared<Job>(new_id(), std::move(spec));
  queue_.push_back(j);
  j->set_queue_position(int(queue_.size()));
  if (tracked) tracked_[j->id()] = j;
  metrics_.set_queue_depth(int64_t(queue_.size()));
  cv_.notify_all();
  *job = std::move(j);
  return SubmitResult::kQueued;
}

std::shared_ptr<Job> LineScheduler::find(const std::string& id) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = tracked_.find(id);
  return it == tracked_.end() ? nullptr : it->second;
}

bool LineScheduler::cancel(const std::shared_ptr<Job>& job, const std::string& reason) {
  std::lock_guard<std::mutex> lock(mu_);
  if (!job->cancel(reason)) return false;
  auto it = std::find(queue_.begin(), queue_.end(), job);
  if (it != queue_.end()) {
    queue_.erase(it);
    renumber();
    metrics_.set_queue_depth(int64_t(queue_.size()));
  }
  if (tracked_.count(job->id())) finished_.push_back(job);
  metrics_.job_ended("cancelled");
  cv_.notify_all();
  return true;
}

int LineScheduler::queue_depth() const {
  std::lock_guard<std::mutex> lock(mu_);
  return int(queue_.size());
}

size_t LineScheduler::jobs_kept() const {
  std::lock_guard<std::mutex> lock(mu_);
  return tracked_.size();
}

int LineScheduler::retry_after_seconds() const {
  std::lock_guard<std::mutex> lock(mu_);
  const double batches = std::ceil(double(queue_.size() + 1) / double(o_.max_batch));
  const double workers = double(std::max<size_t>(1, executors_.size()));
  return std::clamp(int(std::ceil(batches * batch_seconds_ / workers)), 1, 600);
}

void LineScheduler::renumber() {
  for (size_t i = 0; i < queue_.size(); ++i) queue_[i]->set_queue_position(int(i + 1));
}

void LineScheduler::expire_finished() {
  const auto now = Clock::now();
  while (!finished_.empty() &&
         (int(finished_.size()) > o_.keep_finished || now - finished_.front()->finished() > o_.keep_for)) {
    tracked_.erase(finished_.front()->id());
    finished_.pop_front();
  }
}

void LineScheduler::shutdown(std::chrono::milliseconds grace) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (workers_.empty() || !workers_.front().joinable()) return;
    stopping_ = true;
    for (auto& j : queue_)
      if (j->cancel("server shutting down")) {
        metrics_.job_ended("cancelled");
        if (tracked_.count(j->id())) finished_.push_back(j);
      }
    queue_.clear();
    metrics_.set_queue_depth(0);
    cv_.notify_all();
  }
  // The running batches finish unless they outlast the grace period.
  const auto until = Clock::now() + grace;
  for (;;) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (running_batches_ == 0) break;
    }
    if (Clock::now() >= until) {
      abort_running_ = true;
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  for (auto& w : workers_) w.join();
}

void LineScheduler::run(LineStudio& studio) {
  std::unique_lock<std::mutex> lock(mu_);
  for (;;) {
    cv_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
    if (stopping_) return;
    std::shared_ptr<Job> front = queue_.front();
    // Jobs past their deadline while queued fail here instead of taking a row.
    if (Clock::now() > front->spec().deadline) {
      queue_.pop_front();
      front->fail(Status(ErrorCode::kCancelled, "deadline exceeded while queued"));
      metrics_.job_ended("failed");
      if (tracked_.count(front->id())) finished_.push_back(front);
      renumber();
      metrics_.set_queue_depth(int64_t(queue_.size()));
      continue;
    }
    // Jobs that may join the front's batch: same settings, and a width the batch can pad to.
    const int64_t fw = front->spec().bucket_width;
    auto joins = [&](const LineJobSpec& s, int64_t lo, int64_t hi) {
      if (!same_sampling(s, front->spec())) return false;
      if (!o_.ragged) return s.bucket_width == fw;
      const int64_t nlo = std::min(lo, s.bucket_width), nhi = std::max(hi, s.bucket_width);
      return double(nhi) <= o_.max_pad_ratio * double(nlo);
    };
    auto compatible = [&] {
      return int(std::count_if(queue_.begin(), queue_.end(), [&](const auto& j) { return joins(j->spec(), fw, fw); }));
    };
    if (o_.max_batch > 1 && o_.batch_window.count() > 0) {
      cv_.wait_until(lock, front->created() + o_.batch_window, [&] {
        return stopping_ || queue_.empty() || queue_.front() != front || compatible() >= o_.max_batch;
      });
      if (stopping_) return;
      if (queue_.empty() || queue_.front() != front) continue;  // it was cancelled meanwhile
    }
    // The front's own bucket first (no padding), then the nearest widths that keep the batch
    // within the pad ratio; queue order breaks ties, so nothing waits forever behind newer work.
    std::vector<size_t> order(queue_.size());
    for (size_t i = 0; i < order.size(); ++i) order[i] = i;
    std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
      return std::llabs(queue_[a]->spec().bucket_width - fw) < std::llabs(queue_[b]->spec().bucket_width - fw);
    });
    std::vector<std::shared_ptr<Job>> batch;
    std::vector<bool> taken(queue_.size(), false);
    int64_t lo = fw, hi = fw;
    for (size_t i : order) {
      if (int(batch.size()) >= o_.max_batch) break;
      const LineJobSpec& s = queue_[i]->spec();
      if (!joins(s, lo, hi)) continue;
      lo = std::min(lo, s.bucket_width);
      hi = std::max(hi, s.bucket_width);
      batch.push_back(queue_[i]);
      taken[i] = true;
    }
    std::deque<std::shared_ptr<Job>> rest;
    for (size_t i = 0; i < queue_.size(); ++i)
      if (!taken[i]) rest.push_back(queue_[i]);
    queue_.swap(rest);
    renumber();
    metrics_.set_queue_depth(int64_t(queue_.size()));
    ++running_batches_;
    lock.unlock();
    const auto t0 = Clock::now();
    run_batch(studio, batch);
    const double secs = std::chrono::duration<double>(Clock::now() - t0).count();
    lock.lock();
    batch_seconds_ = 0.8 * batch_seconds_ + 0.2 * secs;
    --running_batches_;
    for (auto& j : batch)
      if (tracked_.count(j->id()) && j->state() != JobState::kCancelled) finished_.push_back(j);
    expire_finished();
  }
}

void LineScheduler::run_batch(LineStudio& studio, std::vector<std::shared_ptr<Job>> batch) {
  LineRowsRequest req;
  for (auto& j : batch) {
    j->start(int(batch.size()));
    req.rows.push_back({j->spec().text, j->spec().style, j->spec().seed});
  }
  metrics_.batch_started(int(batch.size()));
  req.sampling = batch.front()->spec().sampling;
  req.clamp_overflow = batch.front()->spec().clamp_overflow;
  req.plan_batch = o_.max_batch;
  req.ragged = o_.ragged;
  if (o_.ragged) {
    int64_t widest = 0;
    for (auto& j : batch) widest = std::max(widest, j->spec().bucket_width);
    req.pad_to_width = std::min(o_.max_width, (widest + o_.plan_step - 1) / o_.plan_step * o_.plan_step);
  }
  std::atomic<bool> stop{false};
  req.cancel = &stop;
  req.on_step = [&](int step, int steps) {
    bool any_live = false;
    const auto now = Clock::now();
    for (auto& j : batch) {
      if (now > j->spec().deadline && j->state() == JobState::kRunning) {
        j->fail(Status(ErrorCode::kCancelled, "deadline exceeded while running"));
        metrics_.job_ended("failed");
      }
      j->set_step(step, steps);
      any_live = any_live || j->state() == JobState::kRunning;
    }
    if (!any_live || abort_running_) stop = true;
  };
  Result<std::vector<LineResult>> lines = Status(ErrorCode::kInternal, "not run");
  try {
    lines = studio.generate_rows(req);
  } catch (const std::exception& e) {
    lines = Status(ErrorCode::kInternal, str_cat("generation threw: ", e.what()));
  }
  metrics_.batch_finished(int(batch.size()));
  uint64_t fallbacks = 0;
  for (LineStudio* e : executors_) fallbacks += e->op_fallbacks();
  metrics_.set_op_fallbacks(fallbacks);
  if (!lines) {
    const Status s = lines.status();
    for (auto& j : batch) {
      if (is_final(j->state())) continue;
      if (s.code() == ErrorCode::kCancelled) {
        if (j->cancel(abort_running_ ? "server shutting down" : "cancelled")) metrics_.job_ended("cancelled");
      } else {
        j->fail(s);
        metrics_.job_ended("failed");
      }
    }
    return;
  }
  for (size_t i = 0; i < batch.size(); ++i) {
    Job& j = *batch[i];
    if (is_final(j.state())) continue;  // cancelled or expired while the batch ran
    const LineResult& r = (*lines)[i];
    auto png = encode_png(Image{int(r.width), int(r.height), 1, r.gray});
    if (!png) {
      j.fail(png.status());
      metrics_.job_ended("failed");
      continue;
    }
    j.finish(std::move(*png), r.width, r.height, r.missing_glyphs);
    metrics_.job_ended("done");
    metrics_.line_latency(j.spec().bucket_width, std::chrono::duration<double>(Clock::now() - j.created()).count());
  }
}

}  // namespace quill::serve
