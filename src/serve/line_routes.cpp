// The line API: synchronous lines, async jobs with SSE progress, styles, and the OpenAI-compatible
// image endpoint. Every route validates fully before anything is queued.
#include <chrono>
#include <cstdio>
#include <ctime>

#include "io/json_util.h"
#include "serve/base64.h"
#include "serve/http_util.h"
#include "serve/line_request.h"
#include "serve/peer_socket.h"

namespace quill::serve {

namespace {

using Json = nlohmann::json;

bool is_multipart(const httplib::Request& req) {
  return req.get_header_value("Content-Type").rfind("multipart/form-data", 0) == 0;
}

// The body as JSON (from JSON or a multipart form) and the style file part, if any.
ApiError read_body(const httplib::Request& req, RequestKind kind, const char* file_field, Json* body,
                   std::vector<uint8_t>* file, bool* has_file) {
  *has_file = false;
  if (is_multipart(req)) {
    FormData form;
    for (const auto& [name, part] : req.files) {
      if (!part.filename.empty() || name == file_field) {
        if (name != file_field)
          return api_error(422, "unknown_field", str_cat("unexpected file part '", name.substr(0, 60), "' (only '",
                                                         file_field, "' takes a file)"),
                           name.substr(0, 60));
        form.files[name].assign(part.content.begin(), part.content.end());
      } else {
        form.fields[name] = part.content;
      }
    }
    if (ApiError e = form_to_json(form, kind, body)) return e;
    if (auto it = form.files.find(file_field); it != form.files.end()) {
      *file = it->second;
      *has_file = true;
    }
    return {};
  }
  const std::string type = req.get_header_value("Content-Type");
  if (!type.empty() && type.rfind("application/json", 0) != 0)
    return api_error(415, "unsupported_media_type",
                     "send application/json or multipart/form-data, not '" + type.substr(0, 80) + "'");
  if (req.body.empty()) return api_error(400, "invalid_json", "the request body is empty (a JSON object is expected)");
  auto parsed = parse_json_checked(req.body, "request body", 32);
  if (!parsed) return api_error(400, "invalid_json", parsed.status().message());
  *body = std::move(*parsed);
  return {};
}

ApiError not_ready(const HttpContext& ctx, httplib::Response& res) {
  if (ctx.stopping) return api_error(503, "shutting_down", "the server is shutting down");
  if (!ctx.ready) {
    res.set_header("Retry-After", "1");
    return api_error(503, "warming_up", "the server is still building its plans (see /readyz)");
  }
  return {};
}

ApiError queue_refusal(const HttpContext& ctx, SubmitResult r, httplib::Response& res) {
  if (r == SubmitResult::kShuttingDown) {
    ctx.metrics.rejected("shutting_down");
    return api_error(503, "shutting_down", "the server is shutting down");
  }
  ctx.metrics.rejected("queue_full");
  res.set_header("Retry-After", std::to_string(ctx.scheduler.retry_after_seconds()));
  return api_error(429, "queue_full",
                   str_cat("the queue is full (", ctx.options.max_queue, " lines); retry after the time given"));
}

// Validates and submits the request's lines (n of them for OpenAI's `n`).
ApiError submit(const HttpContext& ctx, const httplib::Request& req, httplib::Response& res, RequestKind kind,
                bool tracked, ParsedLineRequest* parsed, std::vector<std::shared_ptr<Job>>* jobs) {
  if (ApiError e = not_ready(ctx, res)) return e;
  Json body;
  std::vector<uint8_t> file;
  bool has_file = false;
  if (ApiError e = read_body(req, kind, kind == RequestKind::kLines ? "style" : "style_image", &body, &file, &has_file))
    return e;
  if (ApiError e = parse_line_request(body, has_file ? &file : nullptr, kind, ctx.options, ctx.studio, ctx.styles,
                                      ctx.random_seed(), parsed))
    return e;
  for (int i = 0; i < parsed->n; ++i) {
    LineJobSpec spec = parsed->spec;
    spec.seed += uint64_t(i);
    std::shared_ptr<Job> job;
    const SubmitResult r = ctx.scheduler.submit(std::move(spec), tracked, &job);
    if (r != SubmitResult::kQueued) {
      for (auto& j : *jobs) ctx.scheduler.cancel(j, "another line of the request was refused");
      return queue_refusal(ctx, r, res);
    }
    jobs->push_back(std::move(job));
  }
  return {};
}

// The error a job that did not finish reports.
ApiError job_error(const HttpContext& ctx, const JobView& v) {
  if (v.state == JobState::kCancelled)
    return ctx.stopping ? api_error(503, "shutting_down", v.error_message) : api_error(409, "cancelled", v.error_message);
  if (v.error_message.find("deadline exceeded") != std::string::npos)
    return api_error(504, "deadline_exceeded", v.error_message);
  if (v.error_code == error_code_name(ErrorCode::kInvalidArgument) ||
      v.error_code == error_code_name(ErrorCode::kOutOfRange))
    return api_error(422, "invalid_value", v.error_message, "text");
  return api_error(500, "generation_failed", v.error_message);
}

// Waits for the jobs, cancelling them if the client goes away. False: the client went away.
bool wait_all(const HttpContext& ctx, const httplib::Request& req, const std::vector<std::shared_ptr<Job>>& jobs) {
  const int fd = find_connection_socket(req.remote_addr, req.remote_port, req.local_port);
  for (const auto& j : jobs) {
    JobView v = j->view();
    while (!is_final(v.state)) {
      v = j->wait_change(v.version, std::chrono::milliseconds(200));
      if (peer_hung_up(fd)) {
        for (const auto& k : jobs) ctx.scheduler.cancel(k, "the client disconnected");
        ctx.metrics.rejected("client_disconnected");
        return false;
      }
    }
  }
  return true;
}

// "U+1F600" for each character the glyph font could not draw.
Json missing_json(const std::vector<uint32_t>& cps) {
  Json a = Json::array();
  char buf[16];
  for (uint32_t cp : cps) {
    std::snprintf(buf, sizeof(buf), "U+%04X", cp);
    a.push_back(buf);
  }
  return a;
}

Json job_json(const JobView& v, const LineJobSpec& spec) {
  Json j = {{"id", v.id},
            {"state", job_state_name(v.state)},
            {"queue_position", v.queue_position},
            {"step", v.step},
            {"steps", v.steps},
            {"batch_size", v.batch_size},
            {"seed", spec.seed},
            {"style_id", spec.style_id},
            {"bucket_width", spec.bucket_width},
            {"status_url", "/v1/jobs/" + v.id},
            {"events_url", "/v1/jobs/" + v.id + "/events"},
            {"result_url", "/v1/jobs/" + v.id + "/result"}};
  j["error"] = v.error_message.empty() ? Json(nullptr) : Json{{"code", v.error_code}, {"message", v.error_message}};
  if (v.state == JobState::kDone) {
    j["width"] = v.width;
    j["height"] = v.height;
    j["missing_glyphs"] = missing_json(v.missing_glyphs);
  }
  return j;
}

// One SSE event for a job's state.
std::string sse_event(const JobView& v) {
  Json data = {{"id", v.id}, {"state", job_state_name(v.state)}};
  std::string type = job_state_name(v.state);
  switch (v.state) {
    case JobState::kQueued:
      data["queue_position"] = v.queue_position;
      break;
    case JobState::kRunning:
      type = "step";
      data["step"] = v.step;
      data["steps"] = v.steps;
      data["batch_size"] = v.batch_size;
      break;
    case JobState::kDone:
      data["width"] = v.width;
      data["height"] = v.height;
      data["result_url"] = "/v1/jobs/" + v.id + "/result";
      data["missing_glyphs"] = missing_json(v.missing_glyphs);
      break;
    case JobState::kFailed:
    case JobState::kCancelled:
      data["error"] = {{"code", v.error_code}, {"message", v.error_message}};
      break;
  }
  return str_cat("id: ", v.version, "\nevent: ", type, "\ndata: ", dump_json(data), "\n\n");
}

std::shared_ptr<Job> find_job(const HttpContext& ctx, const httplib::Request& req, httplib::Response& res) {
  auto job = ctx.scheduler.find(req.matches[1]);
  if (!job) reply_error(res, api_error(404, "unknown_job", "no job with this id (finished jobs expire)", "id"));
  return job;
}

}  // namespace

void install_line_routes(httplib::Server& h, const HttpContext& ctx) {
  h.Post("/v1/lines", [ctx](const httplib::Request& req, httplib::Response& res) {
    ParsedLineRequest parsed;
    std::vector<std::shared_ptr<Job>> jobs;
    if (ApiError e = submit(ctx, req, res, RequestKind::kLines, false, &parsed, &jobs)) return reply_error(res, e);
    if (!wait_all(ctx, req, jobs)) return reply_error(res, api_error(499, "client_closed", "the client disconnected"));
    const JobView v = jobs[0]->view();
    if (v.state != JobState::kDone) return reply_error(res, job_error(ctx, v));
    const std::vector<uint8_t> png = jobs[0]->png();
    res.set_header("X-Quill-Seed", std::to_string(parsed.spec.seed));
    res.set_header("X-Quill-Batch-Size", std::to_string(v.batch_size));
    if (!v.missing_glyphs.empty())  // the line shows a box for each of these characters
      res.set_header("X-Quill-Missing-Glyphs", missing_json(v.missing_glyphs).dump());
    if (!parsed.json_response) {
      res.set_content(std::string(png.begin(), png.end()), "image/png");
      return;
    }
    reply_json(res, 200,
               {{"width", v.width}, {"height", v.height}, {"seed", parsed.spec.seed},
                {"style_id", parsed.spec.style_id}, {"bucket_width", parsed.spec.bucket_width},
                {"batch_size", v.batch_size}, {"missing_glyphs", missing_json(v.missing_glyphs)},
                {"png_base64", base64_encode(png.data(), png.size())}});
  });

  h.Post("/v1/jobs", [ctx](const httplib::Request& req, httplib::Response& res) {
    ParsedLineRequest parsed;
    std::vector<std::shared_ptr<Job>> jobs;
    if (ApiError e = submit(ctx, req, res, RequestKind::kLines, true, &parsed, &jobs)) return reply_error(res, e);
    res.set_header("Location", "/v1/jobs/" + jobs[0]->id());
    reply_json(res, 202, job_json(jobs[0]->view(), jobs[0]->spec()));
  });

  h.Get(R"(/v1/jobs/([0-9a-z]{1,64}))", [ctx](const httplib::Request& req, httplib::Response& res) {
    if (auto job = find_job(ctx, req, res)) reply_json(res, 200, job_json(job->view(), job->spec()));
  });

  h.Delete(R"(/v1/jobs/([0-9a-z]{1,64}))", [ctx](const httplib::Request& req, httplib::Response& res) {
    auto job = find_job(ctx, req, res);
    if (!job) return;
    if (!ctx.scheduler.cancel(job, "cancelled by the client"))
      return reply_error(res, api_error(409, "already_ended",
                                        str_cat("the job has already ended (", job_state_name(job->state()), ")"), "id"));
    reply_json(res, 200, job_json(job->view(), job->spec()));
  });

  h.Get(R"(/v1/jobs/([0-9a-z]{1,64})/result)", [ctx](const httplib::Request& req, httplib::Response& res) {
    auto job = find_job(ctx, req, res);
    if (!job) return;
    const JobView v = job->view();
    if (v.state == JobState::kDone) {
      const std::vector<uint8_t> png = job->png();
      return res.set_content(std::string(png.begin(), png.end()), "image/png");
    }
    if (!is_final(v.state))
      return reply_error(res, api_error(409, "not_ready", str_cat("the job is ", job_state_name(v.state),
                                                                  "; wait for its 'done' event"), "id"));
    reply_error(res, job_error(ctx, v));
  });

  h.Get(R"(/v1/jobs/([0-9a-z]{1,64})/events)", [ctx](const httplib::Request& req, httplib::Response& res) {
    auto job = find_job(ctx, req, res);
    if (!job) return;
    res.set_header("Cache-Control", "no-cache");
    res.set_header("X-Accel-Buffering", "no");
    auto seen = std::make_shared<uint64_t>(~uint64_t{0});
    res.set_chunked_content_provider("text/event-stream", [job, seen](size_t, httplib::DataSink& sink) {
      JobView v = job->view();
      if (v.version == *seen && !is_final(v.state)) v = job->wait_change(*seen, std::chrono::seconds(10));
      if (v.version == *seen && !is_final(v.state)) return sink.write(": keep-alive\n\n", 14);  // detects a gone client
      *seen = v.version;
      const std::string ev = sse_event(v);
      if (!sink.write(ev.data(), ev.size())) return false;
      if (is_final(v.state)) sink.done();
      return true;
    });
  });

  h.Post("/v1/styles", [ctx](const httplib::Request& req, httplib::Response& res) {
    if (ApiError e = not_ready(ctx, res)) return reply_error(res, e);
    std::vector<uint8_t> bytes;
    std::string name;
    if (is_multipart(req)) {
      if (!req.has_file("image"))
        return reply_error(res, api_error(422, "missing_field", "send the reference as the file part 'image'", "image"));
      const auto f = req.get_file_value("image");
      bytes.assign(f.content.begin(), f.content.end());
      name = req.has_file("name") ? req.get_file_value("name").content : f.filename;
    } else {
      auto parsed = parse_json_checked(req.body, "request body", 8);
      if (!parsed) return reply_error(res, api_error(400, "invalid_json", parsed.status().message()));
      const Json& j = *parsed;
      if (!j.is_object() || !j.contains("image") || !j["image"].is_string())
        return reply_error(res, api_error(422, "missing_field", "image (base64 PNG or JPEG) is required", "image"));
      for (const auto& [k, v] : j.items())
        if (k != "image" && k != "name")
          return reply_error(res, api_error(422, "unknown_field", "unknown field '" + k.substr(0, 60) + "'", k.substr(0, 60)));
      if (j.contains("name") && !j["name"].is_string())
        return reply_error(res, api_error(422, "invalid_type", "name must be a string", "name"));
      auto decoded = base64_decode(j["image"].get<std::string>());
      if (!decoded) return reply_error(res, api_error(422, "invalid_base64", "image is not valid base64", "image"));
      bytes = std::move(*decoded);
      name = j.value("name", "");
    }
    StyleInfo info;
    if (ApiError e = ctx.styles.add(bytes, name, "image", &info)) return reply_error(res, e);
    reply_json(res, 201, {{"id", info.id}, {"name", info.name}, {"width", info.width}, {"height", info.height}});
  });

  h.Get("/v1/styles", [ctx](const httplib::Request&, httplib::Response& res) {
    Json list = Json::array();
    for (const StyleInfo& s : ctx.styles.list())
      list.push_back({{"id", s.id}, {"name", s.name}, {"width", s.width}, {"height", s.height}, {"builtin", s.builtin}});
    reply_json(res, 200, {{"styles", list}});
  });

  h.Post("/v1/images/generations", [ctx](const httplib::Request& req, httplib::Response& res) {
    ParsedLineRequest parsed;
    std::vector<std::shared_ptr<Job>> jobs;
    if (ApiError e = submit(ctx, req, res, RequestKind::kOpenAIImages, false, &parsed, &jobs))
      return reply_error(res, e);
    if (!wait_all(ctx, req, jobs)) return reply_error(res, api_error(499, "client_closed", "the client disconnected"));
    Json data = Json::array();
    for (const auto& j : jobs) {
      const JobView v = j->view();
      if (v.state != JobState::kDone) return reply_error(res, job_error(ctx, v));
      const std::vector<uint8_t> png = j->png();
      data.push_back({{"b64_json", base64_encode(png.data(), png.size())}, {"revised_prompt", j->spec().text},
                      {"seed", j->spec().seed}});
    }
    reply_json(res, 200, {{"created", int64_t(std::time(nullptr))}, {"data", data}});
  });
}

}  // namespace quill::serve
