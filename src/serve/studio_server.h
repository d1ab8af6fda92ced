// `quill serve`: the line studio over HTTP (cpp-httplib). One warm LineStudio per executor (one by
// default; `--executors N` splits the threads between N, each sampling its own batches), plans built per
// width bucket at start-up (warm-up in the background; /readyz says when), a LineScheduler that
// micro-batches lines across requests, uploaded styles, and the routes of docs/API.md (also
// served as /openapi.json) plus the studio page at /. Used by the CLI and, in-process, by tests.
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "quill/line_studio.h"
#include "serve/serve_options.h"

namespace httplib {
class Server;
}

namespace quill::serve {

class LineScheduler;
class Metrics;
class StyleStore;

class StudioServer {
 public:
  using Log = std::function<void(const std::string&)>;
  // Opens the model and reads the API key file; does not bind yet.
  static Result<std::unique_ptr<StudioServer>> create(const ServeOptions& options, Log log = nullptr);
  ~StudioServer();

  // Binds host:port (port 0: any free port) and returns the port.
  Result<int> bind();
  // Starts the warm-up thread, then serves until stop(); returns when the listener has closed.
  void serve();
  // Graceful stop: no new work (503), queued lines cancelled and reported, the running batch
  // finished (cancelled after `grace`), then the listener closes and serve() returns.
  void stop(std::chrono::milliseconds grace = std::chrono::seconds(30));

  bool ready() const { return ready_; }
  int port() const { return port_; }
  LineStudio& studio() { return *executors_.front(); }
  Metrics& metrics() { return *metrics_; }

 private:
  StudioServer() = default;
  void routes();
  void warm_up();
  uint64_t random_seed();

  ServeOptions o_;
  Log log_;
  std::string api_key_;
  std::vector<std::unique_ptr<LineStudio>> executors_;  // at least one; executor 0 also embeds styles
  std::vector<LineStudio*> executor_list() const;
  std::unique_ptr<Metrics> metrics_;
  std::unique_ptr<StyleStore> styles_;
  std::unique_ptr<LineScheduler> scheduler_;
  std::unique_ptr<httplib::Server> http_;
  std::thread warm_thread_;
  std::atomic<bool> ready_{false}, stopping_{false};
  std::atomic<uint64_t> seed_counter_{0};
  int port_ = 0;
};

}  // namespace quill::serve
