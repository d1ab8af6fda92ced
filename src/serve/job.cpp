#include "serve/job.h"

namespace quill::serve {

const char* job_state_name(JobState s) {
  switch (s) {
    case JobState::kQueued: return "queued";
    case JobState::kRunning: return "running";
    case JobState::kDone: return "done";
    case JobState::kFailed: return "failed";
    case JobState::kCancelled: return "cancelled";
  }
  return "unknown";
}

void Job::bump() {
  v_.version++;
  cv_.notify_all();
}

JobView Job::view() const {
  std::lock_guard<std::mutex> lock(mu_);
  JobView v = v_;
  v.id = id_;
  return v;
}

JobState Job::state() const {
  std::lock_guard<std::mutex> lock(mu_);
  return v_.state;
}

Clock::time_point Job::finished() const {
  std::lock_guard<std::mutex> lock(mu_);
  return finished_;
}

std::vector<uint8_t> Job::png() const {
  std::lock_guard<std::mutex> lock(mu_);
  return png_;
}

void Job::set_queue_position(int p) {
  std::lock_guard<std::mutex> lock(mu_);
  if (v_.state != JobState::kQueued || v_.queue_position == p) return;
  v_.queue_position = p;
  bump();
}

void Job::start(int batch_size) {
  std::lock_guard<std::mutex> lock(mu_);
  if (is_final(v_.state)) return;
  v_.state = JobState::kRunning;
  v_.queue_position = 0;
  v_.batch_size = batch_size;
  v_.step = 0;
  v_.steps = spec_.sampling.steps;
  bump();
}

void Job::set_step(int step, int steps) {
  std::lock_guard<std::mutex> lock(mu_);
  if (v_.state != JobState::kRunning) return;
  v_.step = step;
  v_.steps = steps;
  bump();
}

void Job::finish(std::vector<uint8_t> png, int64_t width, int64_t height, std::vector<uint32_t> missing_glyphs) {
  std::lock_guard<std::mutex> lock(mu_);
  if (is_final(v_.state)) return;  // cancelled while its batch ran: the result is dropped
  png_ = std::move(png);
  v_.state = JobState::kDone;
  v_.width = width;
  v_.height = height;
  v_.missing_glyphs = std::move(missing_glyphs);
  v_.step = v_.steps;
  finished_ = Clock::now();
  bump();
}

void Job::fail(const Status& s) {
  std::lock_guard<std::mutex> lock(mu_);
  if (is_final(v_.state)) return;
  v_.state = JobState::kFailed;
  v_.error_code = error_code_name(s.code());
  v_.error_message = s.to_string();
  finished_ = Clock::now();
  bump();
}

bool Job::cancel(const std::string& reason) {
  std::lock_guard<std::mutex> lock(mu_);
  if (is_final(v_.state)) return false;
  cancel_ = true;
  v_.state = JobState::kCancelled;
  v_.queue_position = 0;
  v_.error_code = "cancelled";
  v_.error_message = reason;
  finished_ = Clock::now();
  bump();
  return true;
}

JobView Job::wait_change(uint64_t seen, std::chrono::milliseconds timeout) const {
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait_for(lock, timeout, [&] { return v_.version != seen || is_final(v_.state); });
  JobView v = v_;
  v.id = id_;
  return v;
}

}  // namespace quill::serve
