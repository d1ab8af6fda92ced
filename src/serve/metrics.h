// The server's counters in Prometheus' text exposition format (GET /metrics): queue depth, the
// size of the batch running, batch sizes run, per-bucket latency histograms, plan builds and
// reuses, requests by route and status, rejections by reason. Thread-safe.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>

namespace quill::serve {

class Metrics {
 public:
  static constexpr std::array<double, 12> kLatencyBounds = {0.05, 0.1, 0.25, 0.5, 1, 2, 4, 8, 15, 30, 60, 120};

  void request(const std::string& route, int status);
  void rejected(const std::string& reason);
  void batch_started(int rows);
  void batch_finished(int rows);
  void line_latency(int64_t bucket_width, double seconds);  // queued -> done, per line
  void job_ended(const char* state);
  void set_queue_depth(int64_t n);
  void set_op_fallbacks(uint64_t n);

  struct External {  // values owned elsewhere, read at scrape time
    uint64_t plan_builds = 0, plan_reuses = 0;
    int64_t styles = 0, jobs_kept = 0;
    bool ready = false;
  };
  std::string render(const External& e) const;

  // For tests and the bench: rows per batch run so far, by size.
  std::map<int, uint64_t> batch_sizes() const;

 private:
  struct Histogram {
    std::array<uint64_t, kLatencyBounds.size()> le{};
    uint64_t count = 0;
    double sum = 0;
  };
  mutable std::mutex mu_;
  std::map<std::pair<std::string, int>, uint64_t> requests_;
  std::map<std::string, uint64_t> rejected_, jobs_ended_;
  std::map<int, uint64_t> batch_sizes_;
  std::map<int64_t, Histogram> latency_;
  int64_t queue_depth_ = 0, running_rows_ = 0;
  uint64_t op_fallbacks_ = 0;
};

}  // namespace quill::serve
