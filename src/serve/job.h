// One line generation as the server tracks it: what was asked (a LineJobSpec), where it is
// (queued -> running with steps -> done / failed / cancelled) and its result. Jobs are shared
// between the HTTP threads that wait on or stream them and the scheduler that runs them; every
// change bumps `version` and wakes waiters.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "quill/line_studio.h"
#include "quill/status.h"

namespace quill::serve {

using Clock = std::chrono::steady_clock;

// Everything that decides a line's pixels, checked and resolved (style embedded, bucket known).
struct LineJobSpec {
  std::string text;
  StyleEmbedding style;  // null: no style
  std::string style_id;  // for reports: "default", "none", an uploaded id, or "inline"
  uint64_t seed = 0;
  LineSampling sampling;
  bool clamp_overflow = false;
  int64_t bucket_width = 0;  // canvas pixels
  Clock::time_point deadline;
};

// Rows may share a forward when their sampling settings are equal (a ragged batch pads the
// narrower rows to the widest; otherwise the width bucket must match too).
inline bool same_sampling(const LineJobSpec& a, const LineJobSpec& b) {
  return a.sampling.steps == b.sampling.steps && a.sampling.guidance_scale == b.sampling.guidance_scale &&
         a.sampling.shift == b.sampling.shift && a.sampling.start_sigma == b.sampling.start_sigma &&
         a.sampling.guide_glyph == b.sampling.guide_glyph &&
         a.clamp_overflow == b.clamp_overflow;
}
inline bool same_batch(const LineJobSpec& a, const LineJobSpec& b) {
  return a.bucket_width == b.bucket_width && same_sampling(a, b);
}

enum class JobState { kQueued, kRunning, kDone, kFailed, kCancelled };
const char* job_state_name(JobState s);
inline bool is_final(JobState s) { return s == JobState::kDone || s == JobState::kFailed || s == JobState::kCancelled; }

// A snapshot of a job for responses and events.
struct JobView {
  std::string id;
  JobState state = JobState::kQueued;
  int queue_position = 0;  // 1 = next; 0 when not queued
  int step = 0, steps = 0;
  int batch_size = 0;  // rows in the forward it ran in
  std::string error_code, error_message;
  int64_t width = 0, height = 0;
  std::vector<uint32_t> missing_glyphs;  // characters the glyph font could not draw (shown as boxes)
  uint64_t version = 0;
};

class Job {
 public:
  Job(std::string id, LineJobSpec spec) : id_(std::move(id)), spec_(std::move(spec)), created_(Clock::now()) {}

  const std::string& id() const { return id_; }
  const LineJobSpec& spec() const { return spec_; }
  Clock::time_point created() const { return created_; }
  Clock::time_point finished() const;
  const std::atomic<bool>& cancel_flag() const { return cancel_; }

  JobView view() const;
  JobState state() const;
  // The PNG once done (empty before).
  std::vector<uint8_t> png() const;

  // Scheduler side.
  void set_queue_position(int p);
  void start(int batch_size);
  void set_step(int step, int steps);
  void finish(std::vector<uint8_t> png, int64_t width, int64_t height, std::vector<uint32_t> missing_glyphs = {});
  void fail(const Status& s);
  // Cancels unless already final; returns whether this call cancelled it. `reason` is reported.
  bool cancel(const std::string& reason);

  // Waits until the version differs from `seen` or the job is final, or `timeout` passes.
  JobView wait_change(uint64_t seen, std::chrono::milliseconds timeout) const;

 private:
  void bump();  // under mu_
  const std::string id_;
  const LineJobSpec spec_;
  const Clock::time_point created_;
  std::atomic<bool> cancel_{false};
  mutable std::mutex mu_;
  mutable std::condition_variable cv_;
  JobView v_;
  Clock::time_point finished_;
  std::vector<uint8_t> png_;
};

}  // namespace quill::serve
