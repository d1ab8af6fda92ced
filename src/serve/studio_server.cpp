#include "serve/studio_server.h"

#include <httplib.h>

#include <algorithm>
#include <fstream>
#include <random>
#include <sstream>

#include "core/thread_pool.h"
#include "io/json_util.h"
#include "serve/assets.h"
#include "serve/http_util.h"
#include "serve/metrics.h"
#include "serve/scheduler.h"
#include "serve/style_store.h"

namespace quill::serve {

StudioServer::~StudioServer() {
  stop(std::chrono::milliseconds(0));
  if (warm_thread_.joinable()) warm_thread_.join();
}

Result<std::unique_ptr<StudioServer>> StudioServer::create(const ServeOptions& options, Log log) {
  std::unique_ptr<StudioServer> s(new StudioServer());
  s->o_ = options;
  s->log_ = log ? std::move(log) : [](const std::string&) {};
  if (options.max_batch < 1 || options.max_batch > 64)
    return invalid_argument("--max-batch must be in [1, 64], got ", options.max_batch);
  if (options.plan_step < 16 || options.plan_step % 16)
    return invalid_argument("--plan-step must be a positive multiple of 16, got ", options.plan_step);
  if (options.max_queue < 1) return invalid_argument("--max-queue must be positive, got ", options.max_queue);
  if (options.batch_window_ms < 0 || options.batch_window_ms > 10000)
    return invalid_argument("--batch-window-ms must be in [0, 10000], got ", options.batch_window_ms);
  if (!options.api_key_file.empty()) {
    std::ifstream f(options.api_key_file);
    if (!f) return not_found("cannot read the API key file").with_file(options.api_key_file);
    std::getline(f, s->api_key_);
    while (!s->api_key_.empty() && (s->api_key_.back() == '\r' || s->api_key_.back() == ' '))
      s->api_key_.pop_back();
    if (s->api_key_.size() < 16)
      return invalid_argument("the API key must be at least 16 characters (first line of the file)")
          .with_file(options.api_key_file);
  }
  if (options.executors < 1 || options.executors > 64)
    return invalid_argument("--executors must be in [1, 64], got ", options.executors);
  LineStudioOptions lo;
  lo.model_dir = options.model_dir;
  lo.threads = options.threads;
  if (options.executors > 1) {
    const int total = options.threads > 0 ? options.threads : default_thread_count();
    lo.threads = std::max(1, total / options.executors);
  }
  lo.device = options.device;
  lo.weights = options.weights;
  for (int e = 0; e < options.executors; ++e) {
    QUILL_ASSIGN_OR_RETURN(auto executor, LineStudio::open(lo));
    s->executors_.push_back(std::move(executor));
  }
  s->metrics_ = std::make_unique<Metrics>();
  s->styles_ = std::make_unique<StyleStore>(s->studio(), options.max_styles, options.max_style_pixels);
  SchedulerOptions so;
  so.max_queue = options.max_queue;
  so.max_batch = options.max_batch;
  so.batch_window = std::chrono::milliseconds(options.batch_window_ms);
  so.ragged = options.ragged;
  so.max_pad_ratio = options.max_pad_ratio;
  so.plan_step = options.plan_step;
  so.max_width = s->studio().max_line_width();
  so.keep_finished = options.keep_jobs;
  so.keep_for = std::chrono::seconds(options.keep_jobs_s);
  s->scheduler_ = std::make_unique<LineScheduler>(s->executor_list(), *s->metrics_, so);
  s->http_ = std::make_unique<httplib::Server>();
  s->routes();
  return s;
}

std::vector<LineStudio*> StudioServer::executor_list() const {
  std::vector<LineStudio*> list;
  for (const auto& e : executors_) list.push_back(e.get());
  return list;
}

uint64_t StudioServer::random_seed() {
  static thread_local std::mt19937_64 rng{std::random_device{}()};
  return rng() ^ seed_counter_.fetch_add(0x9e3779b97f4a7c15ull);
}

Result<int> StudioServer::bind() {
  const int port = o_.port == 0 ? http_->bind_to_any_port(o_.host) : (http_->bind_to_port(o_.host, o_.port) ? o_.port : -1);
  if (port < 0)
    return make_error(ErrorCode::kIo, "cannot listen on ", o_.host, ":", o_.port,
                      " (in use, or not an address of this machine)");
  port_ = port;
  return port;
}

void StudioServer::warm_up() {
  std::vector<int64_t> widths;
  if (o_.warmup == "all") {
    if (o_.ragged) {  // the plan widths ragged batches run at
      for (int64_t w = o_.plan_step; w < studio().max_line_width(); w += o_.plan_step) widths.push_back(w);
      widths.push_back(studio().max_line_width());
    } else {
      widths = studio().bucket_widths();
    }
  } else if (o_.warmup != "none" && !o_.warmup.empty()) {
    std::stringstream ss(o_.warmup);
    for (std::string w; std::getline(ss, w, ',');) widths.push_back(std::stoll(w));  // checked by the CLI
  }
  const auto t0 = std::chrono::steady_clock::now();
  // Every executor builds its own plans, all at once (each on its own threads).
  const std::vector<LineStudio*> all = executor_list();
  std::vector<Status> status(all.size());
  std::vector<std::thread> warmers;
  for (size_t e = 0; e < all.size(); ++e)
    warmers.emplace_back([&, e] { status[e] = all[e]->warm_up(widths, o_.max_batch); });
  for (auto& t : warmers) t.join();
  for (const Status& s : status)
    if (!s.is_ok()) log_("warm-up failed (plans are built on first use instead): " + s.to_string());
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  log_(str_cat("ready: ", widths.size(), " width buckets planned for batches of ", o_.max_batch, " on ", all.size(),
               " executor(s) in ", secs, " s"));
  ready_ = true;
}

void StudioServer::serve() {
  warm_thread_ = std::thread([this] { warm_up(); });
  http_->listen_after_bind();
}

void StudioServer::stop(std::chrono::milliseconds grace) {
  if (stopping_.exchange(true)) return;
  if (scheduler_) scheduler_->shutdown(grace);
  // Let waiting handlers see their jobs' final states before the listener goes.
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  if (http_) http_->stop();
}

void StudioServer::routes() {
  httplib::Server& h = *http_;
  const int threads = o_.http_threads > 0 ? o_.http_threads : 2 * o_.max_queue + o_.max_batch + 32;
  h.new_task_queue = [threads] { return new httplib::ThreadPool(size_t(threads)); };
  h.set_keep_alive_timeout(5);
  h.set_payload_max_length(o_.max_body_bytes);
  h.set_read_timeout(30, 0);
  h.set_write_timeout(30, 0);
  HttpContext ctx{o_, studio(), *metrics_, *styles_, *scheduler_, ready_, stopping_, api_key_,
                  [this] { return random_seed(); }};
  install_line_routes(h, ctx);
  install_service_routes(h, ctx);
}

}  // namespace quill::serve
