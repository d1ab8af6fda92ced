// quill serve: the handwriting line studio over HTTP (docs/API.md): the web page at /, the JSON
// API under /v1/, /openapi.json, /healthz, /readyz, /metrics. SIGTERM / SIGINT stop it gracefully
// (exit 0): no new work, queued lines cancelled and reported, the running batch finished.
#include <csignal>
#include <cstdio>
#include <sstream>
#include <thread>

#include <unistd.h>

#include "cli/command.h"
#include "serve/studio_server.h"

namespace quill::cli {
namespace {

struct ServeCliOptions {
  serve::ServeOptions s;
  std::string device = "auto";
  int grace_s = 30;
};

// Library threads (OpenBLAS, oneDNN) exist before main() and may receive the signal, so a handler
// (not sigwait) catches it and wakes the stopping thread through a pipe.
int g_signal_pipe[2] = {-1, -1};
void on_stop_signal(int sig) {
  const unsigned char b = static_cast<unsigned char>(sig);
  [[maybe_unused]] const ssize_t n = write(g_signal_pipe[1], &b, 1);
}

Status check_warmup(const std::string& w) {
  if (w == "all" || w == "none") return Status::ok();
  std::stringstream ss(w);
  int n = 0;
  for (std::string part; std::getline(ss, part, ',');) {
    char* end = nullptr;
    const long v = std::strtol(part.c_str(), &end, 10);
    if (part.empty() || *end || v <= 0 || v % 16)
      return invalid_argument("--warmup takes 'all', 'none' or canvas widths (multiples of 16) separated by commas; got '",
                              part, "'");
    ++n;
  }
  if (n == 0) return invalid_argument("--warmup is empty");
  return Status::ok();
}

int run_serve(const ServeCliOptions& o) {
  auto device = parse_device_choice(o.device);
  if (!device) return report_error(device.status());
  if (Status s = check_warmup(o.s.warmup); !s.is_ok()) return report_error(s);
  serve::ServeOptions so = o.s;
  so.device = *device;

  if (pipe(g_signal_pipe) != 0) return report_error(make_error(ErrorCode::kIo, "cannot create the signal pipe"));
  struct sigaction sa = {};
  sa.sa_handler = on_stop_signal;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGTERM, &sa, nullptr);
  sigaction(SIGINT, &sa, nullptr);
  std::signal(SIGPIPE, SIG_IGN);

  auto log = [](const std::string& m) { std::fprintf(stderr, "quill serve: %s\n", m.c_str()); };
  auto server = serve::StudioServer::create(so, log);
  if (!server) return report_error(server.status());
  auto port = (*server)->bind();
  if (!port) return report_error(port.status());
  std::printf("quill serve: listening on http://%s:%d/ (model %s, device %s, max batch %d, window %d ms, %d executor%s)\n",
              so.host.c_str(), *port, (*server)->studio().model_dir().c_str(), (*server)->studio().device().c_str(),
              so.max_batch, so.batch_window_ms, so.executors, so.executors == 1 ? "" : "s");
  std::fflush(stdout);
  serve::StudioServer* srv = server->get();
  std::thread waiter([srv, grace = o.grace_s] {
    unsigned char sig = 0;
    while (read(g_signal_pipe[0], &sig, 1) < 0) {
    }
    std::fprintf(stderr, "quill serve: %s: stopping (finishing the running batch, cancelling queued lines)\n",
                 sig == SIGTERM ? "SIGTERM" : "SIGINT");
    srv->stop(std::chrono::seconds(grace));
  });
  srv->serve();
  waiter.join();
  std::fprintf(stderr, "quill serve: stopped\n");
  return kExitOk;
}

Runner setup_serve(CLI::App& sub) {
  auto o = std::make_shared<ServeCliOptions>();
  sub.add_option("--model", o->s.model_dir, "line model folder (default: the embedded models/quill-line)");
  sub.add_option("--host", o->s.host, "address to bind (default 127.0.0.1: this machine only)");
  sub.add_option("--port", o->s.port, "TCP port (0: any free port)")->check(CLI::Range(0, 65535));
  sub.add_option("--warmup", o->s.warmup,
                 "width buckets to plan before /readyz says ready: all, none, or canvas widths like 256,512");
  sub.add_option("--max-queue", o->s.max_queue, "lines waiting at most; more get 429")->check(CLI::Range(1, 100000));
  sub.add_option("--max-batch", o->s.max_batch, "lines sampled together per forward (1: no micro-batching)")
      ->check(CLI::Range(1, 64));
  sub.add_option("--batch-window-ms", o->s.batch_window_ms,
                 "how long the oldest line waits for others to share its forward")
      ->check(CLI::Range(0, 10000));
  sub.add_flag("!--no-ragged", o->s.ragged,
               "batch only lines of one width bucket (default: lines of similar widths share a forward, padded)");
  sub.add_option("--max-pad-ratio", o->s.max_pad_ratio, "widest / narrowest line in one ragged batch")
      ->check(CLI::Range(1.0, 64.0));
  sub.add_option("--plan-step", o->s.plan_step,
                 "ragged batches run at multiples of this width (canvas pixels): fewer plans, less memory")
      ->check(CLI::Range(16, 1024));
  sub.add_option("--api-key-file", o->s.api_key_file,
                 "require 'Authorization: Bearer <key>' on /v1/ (the key is the file's first line, >= 16 chars)");
  sub.add_option("--cors-origin", o->s.cors_origin, "allow this origin to call the API from a browser (default: none)");
  sub.add_option("--threads", o->s.threads, "CPU threads for sampling")->check(CLI::Range(1, 1024));
  sub.add_option("--executors", o->s.executors,
                 "line models sampling at once, the threads split between them (1: lowest latency; 2 on 2 cores: "
                 "more lines/s under load)")
      ->check(CLI::Range(1, 64));
  sub.add_option("--weights", o->s.weights,
                 "f32 (default), or a quantized variant (q8_0, fp8_e4m3, tq2_0_g128) that passed the model's "
                 "quality gate (variants.json)");
  sub.add_option("--device", o->device, "auto (GPU when available), gpu (required) or cpu")
      ->check(CLI::IsMember({"auto", "cpu", "gpu"}));
  sub.add_option("--http-threads", o->s.http_threads,
                 "connections served at once (default: 2 x max-queue + max-batch + 32, so a full queue answers 429)")
      ->check(CLI::Range(4, 100000));
  sub.add_option("--max-body-bytes", o->s.max_body_bytes, "request body limit (413 above)")
      ->check(CLI::Range(size_t(1024), size_t(1) << 30));
  sub.add_option("--max-text-chars", o->s.max_text_chars, "longest text accepted (422 above)")
      ->check(CLI::Range(1, 10000));
  sub.add_option("--max-style-pixels", o->s.max_style_pixels, "largest style image, checked before decoding (413)")
      ->check(CLI::Range(int64_t(1), int64_t(1) << 28));
  sub.add_option("--max-steps", o->s.max_steps, "most sampling steps a request may ask for")->check(CLI::Range(1, 1000));
  sub.add_option("--timeout-s", o->s.request_timeout_s, "a line not done by then fails (504)")
      ->check(CLI::Range(1.0, 86400.0));
  sub.add_option("--grace-s", o->grace_s, "on SIGTERM, how long the running batch may take before it is cancelled")
      ->check(CLI::Range(0, 3600));
  return [o] { return run_serve(*o); };
}

}  // namespace

QUILL_COMMAND(serve, "serve", "Serve the line studio over HTTP: web page, JSON API with async jobs, OpenAI images API",
              setup_serve);

}  // namespace quill::cli
