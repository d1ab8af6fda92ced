// What the route handlers share: the server's parts, JSON replies and the API's error shape.
#pragma once

#include <httplib.h>

#include <atomic>
#include <functional>
#include <string>

#include <nlohmann/json.hpp>

#include "quill/line_studio.h"
#include "serve/api_error.h"
#include "serve/metrics.h"
#include "serve/scheduler.h"
#include "serve/serve_options.h"
#include "serve/style_store.h"

namespace quill::serve {

struct HttpContext {
  const ServeOptions& options;
  LineStudio& studio;
  Metrics& metrics;
  StyleStore& styles;
  LineScheduler& scheduler;
  const std::atomic<bool>& ready;
  const std::atomic<bool>& stopping;
  const std::string& api_key;
  std::function<uint64_t()> random_seed;
};

void reply_json(httplib::Response& res, int status, const nlohmann::json& body);
void reply_error(httplib::Response& res, const ApiError& e);
// The route label for metrics: ids replaced by {id}.
std::string route_label(const std::string& path);

// /v1/lines, /v1/jobs..., /v1/styles, /v1/images/generations.
void install_line_routes(httplib::Server& h, const HttpContext& ctx);
// /, /openapi.json, /healthz, /readyz, /metrics; the API key check, CORS, JSON error bodies for
// errors cpp-httplib raises itself (413, 404 ...), and per-request metrics.
void install_service_routes(httplib::Server& h, const HttpContext& ctx);

}  // namespace quill::serve
