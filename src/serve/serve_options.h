// `quill serve` settings (see `quill serve --help` and docs/API.md).
#pragma once

#include <cstdint>
#include <string>

#include "quill/device.h"

namespace quill::serve {

struct ServeOptions {
  std::string model_dir;  // empty: the embedded default line model
  std::string host = "127.0.0.1";
  int port = 8080;  // 0: any free port (tests)
  std::string warmup = "all";  // "all", "none" or comma-separated canvas widths
  int max_queue = 64;
  int max_batch = 8;
  int batch_window_ms = 25;
  bool ragged = true;          // batch lines of different widths (padded, masked); false: one bucket per batch
  double max_pad_ratio = 1.5;  // widest / narrowest line of a ragged batch
  int plan_step = 64;          // ragged batches run at multiples of this width (canvas pixels)
  std::string api_key_file;
  std::string cors_origin;  // empty: no CORS headers
  int threads = 0;
  // Line models sampling at once, each with threads / executors threads and its own plans; a free
  // one takes the next batch. 1: every batch uses all threads (lowest latency for one user); more:
  // higher throughput under load on small machines (docs/PERFORMANCE.md).
  int executors = 1;
  DeviceChoice device = DeviceChoice::kAuto;
  std::string weights;  // LineStudioOptions::weights: a quantized variant, only where its gate passed
  // Connections served at once; each waiting request and each event stream holds one, so there
  // must be more than the queue can hold for a full queue to answer 429 at once rather than
  // leaving new connections unserved. 0: 2 x max_queue + max_batch + 32.
  int http_threads = 0;
  // Limits.
  size_t max_body_bytes = 8u << 20;
  int max_text_chars = 300;
  int64_t max_style_pixels = 4096 * 4096;
  int max_steps = 100;
  int max_n = 8;  // images per /v1/images/generations request
  int max_styles = 256;
  double request_timeout_s = 300;  // a line not done by then fails
  int keep_jobs = 1000;
  int keep_jobs_s = 600;
};

}  // namespace quill::serve
