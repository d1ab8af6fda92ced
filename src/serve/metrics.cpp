#include "serve/metrics.h"

#include <sstream>

namespace quill::serve {

void Metrics::request(const std::string& route, int status) {
  std::lock_guard<std::mutex> lock(mu_);
  requests_[{route, status}]++;
}
void Metrics::rejected(const std::string& reason) {
  std::lock_guard<std::mutex> lock(mu_);
  rejected_[reason]++;
}
void Metrics::batch_started(int rows) {
  std::lock_guard<std::mutex> lock(mu_);
  batch_sizes_[rows]++;
  running_rows_ += rows;
}
void Metrics::batch_finished(int rows) {
  std::lock_guard<std::mutex> lock(mu_);
  running_rows_ -= rows;
}
void Metrics::line_latency(int64_t bucket_width, double seconds) {
  std::lock_guard<std::mutex> lock(mu_);
  Histogram& h = latency_[bucket_width];
  for (size_t i = 0; i < kLatencyBounds.size(); ++i)
    if (seconds <= kLatencyBounds[i]) h.le[i]++;
  h.count++;
  h.sum += seconds;
}
void Metrics::job_ended(const char* state) {
  std::lock_guard<std::mutex> lock(mu_);
  jobs_ended_[state]++;
}
void Metrics::set_queue_depth(int64_t n) {
  std::lock_guard<std::mutex> lock(mu_);
  queue_depth_ = n;
}
void Metrics::set_op_fallbacks(uint64_t n) {
  std::lock_guard<std::mutex> lock(mu_);
  op_fallbacks_ = n;
}
std::map<int, uint64_t> Metrics::batch_sizes() const {
  std::lock_guard<std::mutex> lock(mu_);
  return batch_sizes_;
}

std::string Metrics::render(const External& e) const {
  std::lock_guard<std::mutex> lock(mu_);
  std::ostringstream o;
  auto head = [&](const char* name, const char* type, const char* help) {
    o << "# HELP " << name << ' ' << help << "\n# TYPE " << name << ' ' << type << '\n';
  };
  head("quill_ready", "gauge", "1 once warm-up has built the plans asked for");
  o << "quill_ready " << (e.ready ? 1 : 0) << '\n';
  head("quill_queue_depth", "gauge", "Lines waiting for a batch");
  o << "quill_queue_depth " << queue_depth_ << '\n';
  head("quill_running_batch_rows", "gauge", "Lines being sampled now, in all executors' batches (0: idle)");
  o << "quill_running_batch_rows " << running_rows_ << '\n';
  head("quill_batches_total", "counter", "Batches sampled, by lines per batch");
  for (const auto& [rows, n] : batch_sizes_) o << "quill_batches_total{rows=\"" << rows << "\"} " << n << '\n';
  head("quill_line_latency_seconds", "histogram", "Queued to done, per line, by width bucket (canvas pixels)");
  for (const auto& [w, h] : latency_) {
    for (size_t i = 0; i < kLatencyBounds.size(); ++i)
      o << "quill_line_latency_seconds_bucket{bucket=\"" << w << "\",le=\"" << kLatencyBounds[i] << "\"} " << h.le[i]
        << '\n';
    o << "quill_line_latency_seconds_bucket{bucket=\"" << w << "\",le=\"+Inf\"} " << h.count << '\n';
    o << "quill_line_latency_seconds_sum{bucket=\"" << w << "\"} " << h.sum << '\n';
    o << "quill_line_latency_seconds_count{bucket=\"" << w << "\"} " << h.count << '\n';
  }
  head("quill_jobs_ended_total", "counter", "Jobs that ended, by final state");
  for (const auto& [s, n] : jobs_ended_) o << "quill_jobs_ended_total{state=\"" << s << "\"} " << n << '\n';
  head("quill_plan_builds_total", "counter", "Execution plans built (one per width bucket once warm)");
  o << "quill_plan_builds_total " << e.plan_builds << '\n';
  head("quill_plan_reuses_total", "counter", "Forwards that ran in an existing plan");
  o << "quill_plan_reuses_total " << e.plan_reuses << '\n';
  head("quill_op_fallbacks_total", "counter", "Ops whose GPU run failed and whose CPU result was used");
  o << "quill_op_fallbacks_total " << op_fallbacks_ << '\n';
  head("quill_requests_total", "counter", "HTTP requests by route and status");
  for (const auto& [k, n] : requests_)
    o << "quill_requests_total{route=\"" << k.first << "\",status=\"" << k.second << "\"} " << n << '\n';
  head("quill_rejected_total", "counter", "Requests refused, by reason");
  for (const auto& [r, n] : rejected_) o << "quill_rejected_total{reason=\"" << r << "\"} " << n << '\n';
  head("quill_styles", "gauge", "Style embeddings kept (uploaded and default)");
  o << "quill_styles " << e.styles << '\n';
  head("quill_jobs_kept", "gauge", "Jobs held (queued, running and finished ones not yet expired)");
  o << "quill_jobs_kept " << e.jobs_kept << '\n';
  return o.str();
}

}  // namespace quill::serve
