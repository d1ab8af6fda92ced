#include <cstring>

#include "io/json_util.h"
#include "serve/assets.h"
#include "serve/http_util.h"

namespace quill::serve {

void reply_json(httplib::Response& res, int status, const nlohmann::json& body) {
  res.status = status;
  res.set_content(dump_json(body), "application/json");
}

void reply_error(httplib::Response& res, const ApiError& e) {
  nlohmann::json err = {{"code", e.code}, {"message", e.message}};
  err["field"] = e.field.empty() ? nlohmann::json(nullptr) : nlohmann::json(e.field);
  reply_json(res, e.status, {{"error", err}});
}

std::string route_label(const std::string& path) {
  static const std::string jobs = "/v1/jobs/";
  if (path.rfind(jobs, 0) == 0) {
    const size_t slash = path.find('/', jobs.size());
    return slash == std::string::npos ? "/v1/jobs/{id}" : "/v1/jobs/{id}" + path.substr(slash).substr(0, 16);
  }
  for (const char* known : {"/", "/openapi.json", "/healthz", "/readyz", "/metrics", "/v1/lines", "/v1/jobs",
                            "/v1/styles", "/v1/images/generations"})
    if (path == known) return path;
  return "other";
}

namespace {

// Compares every byte whatever the first difference, so the time taken says nothing about the key.
bool constant_time_equal(const std::string& key, const std::string& given) {
  size_t diff = key.size() ^ given.size();
  for (size_t i = 0; i < key.size(); ++i)
    diff |= size_t(uint8_t(key[i]) ^ uint8_t(i < given.size() ? given[i] : 0));
  return diff == 0;
}

bool needs_key(const std::string& path) { return path.rfind("/v1/", 0) == 0; }

}  // namespace

void install_service_routes(httplib::Server& h, const HttpContext& ctx) {
  h.set_pre_routing_handler([ctx](const httplib::Request& req, httplib::Response& res) {
    if (!ctx.options.cors_origin.empty()) {
      res.set_header("Access-Control-Allow-Origin", ctx.options.cors_origin);
      res.set_header("Vary", "Origin");
      if (req.method == "OPTIONS") {
        res.set_header("Access-Control-Allow-Methods", "GET, POST, DELETE, OPTIONS");
        res.set_header("Access-Control-Allow-Headers", "Authorization, Content-Type");
        res.set_header("Access-Control-Max-Age", "600");
        res.status = 204;
        return httplib::Server::HandlerResponse::Handled;
      }
    }
    if (!ctx.api_key.empty() && needs_key(req.path)) {
      const std::string auth = req.get_header_value("Authorization");
      const std::string prefix = "Bearer ";
      const std::string given = auth.rfind(prefix, 0) == 0 ? auth.substr(prefix.size()) : std::string();
      if (!constant_time_equal(ctx.api_key, given)) {
        ctx.metrics.rejected("unauthorized");
        res.set_header("WWW-Authenticate", "Bearer");
        reply_error(res, api_error(401, "unauthorized",
                                   "this server needs an API key: send 'Authorization: Bearer <key>'"));
        return httplib::Server::HandlerResponse::Handled;
      }
    }
    return httplib::Server::HandlerResponse::Unhandled;
  });

  h.set_error_handler([ctx](const httplib::Request& req, httplib::Response& res) {
    if (!res.body.empty()) return;
    switch (res.status) {
      case 404:
        reply_error(res, api_error(404, "not_found", "no route " + req.method + " " + req.path.substr(0, 200)));
        break;
      case 413:
        ctx.metrics.rejected("body_too_large");
        reply_error(res, api_error(413, "body_too_large",
                                   str_cat("the request body is over the limit of ", ctx.options.max_body_bytes,
                                           " bytes")));
        break;
      case 400:
        reply_error(res, api_error(400, "bad_request", "malformed HTTP request"));
        break;
      default:
        reply_error(res, api_error(res.status, "http_error", str_cat("HTTP status ", res.status)));
    }
  });
  h.set_exception_handler([](const httplib::Request&, httplib::Response& res, std::exception_ptr ep) {
    std::string what = "unknown exception";
    try {
      if (ep) std::rethrow_exception(ep);
    } catch (const std::exception& e) {
      what = e.what();
    } catch (...) {
    }
    reply_error(res, api_error(500, "internal", "the server failed on this request: " + what));
  });
  h.set_logger([ctx](const httplib::Request& req, const httplib::Response& res) {
    ctx.metrics.request(route_label(req.path), res.status);
  });

  h.Get("/", [](const httplib::Request&, httplib::Response& res) {
    res.set_content(std::string(studio_page_html()), "text/html; charset=utf-8");
    res.set_header("Content-Security-Policy",
                   "default-src 'self'; img-src 'self' data: blob:; style-src 'self' 'unsafe-inline'; "
                   "script-src 'self' 'unsafe-inline'; connect-src 'self'");
  });
  h.Get("/openapi.json", [](const httplib::Request&, httplib::Response& res) {
    res.set_content(std::string(openapi_json()), "application/json");
  });
  h.Get("/healthz", [](const httplib::Request&, httplib::Response& res) { reply_json(res, 200, {{"status", "ok"}}); });
  h.Get("/readyz", [ctx](const httplib::Request&, httplib::Response& res) {
    const bool ready = ctx.ready && !ctx.stopping;
    reply_json(res, ready ? 200 : 503,
               {{"ready", ready}, {"stopping", bool(ctx.stopping)}, {"model", ctx.studio.model_dir()},
                {"device", ctx.studio.device()}, {"line_height", ctx.studio.line_height()},
                {"max_line_width", ctx.studio.max_line_width()}, {"max_batch", ctx.options.max_batch},
                {"defaults",
                 {{"steps", ctx.studio.defaults().steps},
                  {"cfg", ctx.studio.defaults().guidance_scale},
                  {"start_sigma", ctx.studio.defaults().start_sigma},
                  {"shift", ctx.studio.defaults().shift},
                  {"guide_glyph", ctx.studio.defaults().guide_glyph}}}});
  });
  h.Get("/metrics", [ctx](const httplib::Request&, httplib::Response& res) {
    Metrics::External e;
    e.plan_builds = ctx.studio.plan_builds();
    e.plan_reuses = ctx.studio.plan_reuses();
    e.styles = int64_t(ctx.styles.size());
    e.jobs_kept = int64_t(ctx.scheduler.jobs_kept());
    e.ready = ctx.ready;
    res.set_content(ctx.metrics.render(e), "text/plain; version=0.0.4");
  });
}

}  // namespace quill::serve
