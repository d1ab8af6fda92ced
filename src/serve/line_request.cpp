#include "serve/line_request.h"

#include <cmath>
#include <set>

#include "serve/base64.h"
#include "text/utf8.h"

namespace quill::serve {

namespace {

constexpr uint64_t kMaxSeed = (uint64_t{1} << 53) - 1;  // exact in a JSON number (and JavaScript)

enum class Type { kString, kInteger, kNumber, kBool };
struct Field {
  const char* name;
  Type type;
};

// The fields each endpoint takes. OpenAI's endpoint ignores fields it does not know (clients send
// `model`, `user`, `quality` ...); /v1/lines refuses them, so a misspelt setting is not silently lost.
const std::vector<Field>& fields_of(RequestKind kind) {
  static const std::vector<Field> lines = {
      {"text", Type::kString},         {"style", Type::kString},        {"style_id", Type::kString},
      {"seed", Type::kInteger},        {"steps", Type::kInteger},       {"cfg", Type::kNumber},
      {"start_sigma", Type::kNumber},  {"shift", Type::kNumber},        {"clamp_overflow", Type::kBool},
      {"response_format", Type::kString}, {"timeout_s", Type::kNumber}};
  static const std::vector<Field> openai = {
      {"prompt", Type::kString},       {"n", Type::kInteger},           {"response_format", Type::kString},
      {"size", Type::kString},         {"model", Type::kString},        {"user", Type::kString},
      {"quality", Type::kString},      {"style", Type::kString},        {"style_image", Type::kString},
      {"style_id", Type::kString},     {"seed", Type::kInteger},        {"steps", Type::kInteger},
      {"cfg", Type::kNumber},          {"start_sigma", Type::kNumber},  {"shift", Type::kNumber},
      {"clamp_overflow", Type::kBool}, {"timeout_s", Type::kNumber}};
  return kind == RequestKind::kLines ? lines : openai;
}

const Field* find_field(RequestKind kind, const std::string& name) {
  for (const Field& f : fields_of(kind))
    if (name == f.name) return &f;
  return nullptr;
}

const char* type_name(Type t) {
  switch (t) {
    case Type::kString: return "a string";
    case Type::kInteger: return "an integer";
    case Type::kNumber: return "a number";
    case Type::kBool: return "a boolean";
  }
  return "?";
}

bool has_type(const nlohmann::json& v, Type t) {
  switch (t) {
    case Type::kString: return v.is_string();
    case Type::kInteger: return v.is_number_integer() || (v.is_number_float() && std::floor(v.get<double>()) == v.get<double>());
    case Type::kNumber: return v.is_number();
    case Type::kBool: return v.is_boolean();
  }
  return false;
}

ApiError range_error(const char* field, double lo, double hi, const nlohmann::json& got) {
  return api_error(422, "out_of_range", str_cat(field, " must be in [", lo, ", ", hi, "], got ", got.dump()), field);
}

// A style image as base64, optionally as a data: URL.
ApiError decode_style_text(const std::string& s, const char* field, std::vector<uint8_t>* out) {
  std::string_view text = s;
  if (text.rfind("data:", 0) == 0) {
    const size_t comma = text.find(',');
    if (comma == std::string_view::npos || text.substr(0, comma).find(";base64") == std::string_view::npos)
      return api_error(422, "invalid_image", "a data: URL style must be base64 (data:image/png;base64,...)", field);
    text = text.substr(comma + 1);
  }
  auto bytes = base64_decode(text);
  if (!bytes) return api_error(422, "invalid_base64", "the style is not valid base64", field);
  *out = std::move(*bytes);
  return {};
}

}  // namespace

ApiError form_to_json(const FormData& form, RequestKind kind, nlohmann::json* out) {
  *out = nlohmann::json::object();
  for (const auto& [name, value] : form.fields) {
    const Field* f = find_field(kind, name);
    if (!f) {
      (*out)[name] = value;  // unknown: the validator decides
      continue;
    }
    switch (f->type) {
      case Type::kString:
        (*out)[name] = value;
        break;
      case Type::kBool:
        if (value != "true" && value != "false")
          return api_error(422, "invalid_type", str_cat(name, " must be true or false, got '", value.substr(0, 40), "'"),
                           name);
        (*out)[name] = value == "true";
        break;
      case Type::kInteger:
      case Type::kNumber: {
        auto parsed = nlohmann::json::parse(value, nullptr, false);
        if (parsed.is_discarded() || !parsed.is_number())
          return api_error(422, "invalid_type", str_cat(name, " must be ", type_name(f->type), ", got '",
                                                        value.substr(0, 40), "'"),
                           name);
        (*out)[name] = parsed;
        break;
      }
    }
  }
  return {};
}

ApiError parse_line_request(const nlohmann::json& body, const std::vector<uint8_t>* style_file, RequestKind kind,
                            const ServeOptions& limits, LineStudio& studio, StyleStore& styles,
                            uint64_t random_seed, ParsedLineRequest* out) {
  if (!body.is_object()) return api_error(400, "invalid_json", "the request body must be a JSON object");
  for (const auto& [key, value] : body.items()) {
    const Field* f = find_field(kind, key);
    if (!f) {
      if (kind == RequestKind::kLines)
        return api_error(422, "unknown_field", str_cat("unknown field '", key.substr(0, 60), "'"), key.substr(0, 60));
      continue;
    }
    if (!value.is_null() && !has_type(value, f->type))
      return api_error(422, "invalid_type", str_cat(key, " must be ", type_name(f->type), ", got ", value.type_name()),
                       key);
  }
  auto get = [&](const char* key) -> const nlohmann::json* {
    auto it = body.find(key);
    return it == body.end() || it->is_null() ? nullptr : &*it;
  };
  ParsedLineRequest& r = *out;
  LineJobSpec& s = r.spec;

  const char* text_field = kind == RequestKind::kLines ? "text" : "prompt";
  const nlohmann::json* text = get(text_field);
  if (!text) return api_error(422, "missing_field", str_cat(text_field, " is required"), text_field);
  s.text = text->get<std::string>();
  if (!is_valid_utf8(s.text)) return api_error(422, "invalid_text", "the text is not valid UTF-8", text_field);
  size_t chars = 0;
  for (unsigned char c : s.text) chars += (c & 0xC0) != 0x80;
  if (chars == 0) return api_error(422, "invalid_text", "the text is empty", text_field);
  if (chars > size_t(limits.max_text_chars))
    return api_error(422, "text_too_long",
                     str_cat("the text has ", chars, " characters; the limit is ", limits.max_text_chars), text_field);

  // Sampling: the model's defaults under the request's settings.
  s.sampling = studio.defaults();
  if (auto* v = get("steps")) {
    const double x = v->get<double>();
    if (!(x >= 1 && x <= limits.max_steps)) return range_error("steps", 1, limits.max_steps, *v);
    s.sampling.steps = int(x);
  }
  auto number = [&](const char* key, SettingRange range, float* field) -> ApiError {
    if (auto* v = get(key)) {
      const double x = v->get<double>();
      if (!(x >= range.lo && x <= range.hi)) return range_error(key, range.lo, range.hi, *v);
      *field = float(x);
    }
    return {};
  };
  if (ApiError e = number("cfg", kLineGuidanceRange, &s.sampling.guidance_scale)) return e;
  if (ApiError e = number("start_sigma", kLineStartSigmaRange, &s.sampling.start_sigma)) return e;
  if (ApiError e = number("shift", kLineShiftRange, &s.sampling.shift)) return e;

  s.seed = random_seed & kMaxSeed;
  if (auto* v = get("seed")) {
    const double x = v->get<double>();
    if (!(x >= 0 && x <= double(kMaxSeed))) return range_error("seed", 0, double(kMaxSeed), *v);
    s.seed = uint64_t(x);
  }
  if (auto* v = get("clamp_overflow")) s.clamp_overflow = v->get<bool>();
  double timeout = limits.request_timeout_s;
  if (auto* v = get("timeout_s")) {
    const double x = v->get<double>();
    if (!(x >= 1 && x <= limits.request_timeout_s)) return range_error("timeout_s", 1, limits.request_timeout_s, *v);
    timeout = x;
  }
  s.deadline = Clock::now() + std::chrono::milliseconds(int64_t(timeout * 1000));

  if (kind == RequestKind::kLines) {
    if (auto* v = get("response_format")) {
      const std::string f = v->get<std::string>();
      if (f != "png" && f != "json")
        return api_error(422, "invalid_value", "response_format must be \"png\" or \"json\"", "response_format");
      r.json_response = f == "json";
    }
  } else {
    r.json_response = true;
    if (auto* v = get("response_format"); v && v->get<std::string>() != "b64_json")
      return api_error(422, "unsupported_value",
                       "response_format must be \"b64_json\" (this server returns images inline, never as URLs)",
                       "response_format");
    if (auto* v = get("n")) {
      const double x = v->get<double>();
      if (!(x >= 1 && x <= limits.max_n)) return range_error("n", 1, limits.max_n, *v);
      r.n = int(x);
      if (s.seed + uint64_t(r.n) > kMaxSeed) s.seed = kMaxSeed - uint64_t(r.n);
    }
    if (auto* v = get("size")) {  // validated, not used: a line's size follows from its text
      const std::string size = v->get<std::string>();
      int w = 0, h = 0;
      char tail = 0;
      if (size != "auto" && (std::sscanf(size.c_str(), "%dx%d%c", &w, &h, &tail) != 2 || w < 1 || h < 1))
        return api_error(422, "invalid_value", "size must be \"auto\" or WIDTHxHEIGHT (it is not used: a line's size "
                                               "follows from its text)", "size");
    }
  }

  // Style: inline image, upload field, or a known id (default: the model's reference hand).
  const char* inline_field = kind == RequestKind::kLines ? "style" : "style_image";
  const nlohmann::json* inline_style = get(inline_field);
  const nlohmann::json* style_id = get("style_id");
  if ((inline_style || style_file) && style_id)
    return api_error(422, "conflicting_fields", str_cat("give either ", inline_field, " or style_id, not both"),
                     "style_id");
  if (style_file || inline_style) {
    std::vector<uint8_t> bytes;
    if (style_file) {
      bytes = *style_file;
    } else if (ApiError e = decode_style_text(inline_style->get<std::string>(), inline_field, &bytes)) {
      return e;
    }
    if (ApiError e = styles.embed_inline(bytes, inline_field, &s.style)) return e;
    s.style_id = "inline";
  } else {
    s.style_id = style_id ? style_id->get<std::string>() : "default";
    if (!styles.get(s.style_id, &s.style)) {
      if (!style_id) {
        s.style_id = "none";  // a model without a reference hand
      } else {
        return api_error(404, "unknown_style", str_cat("no style with id '", s.style_id.substr(0, 60),
                                                       "' (GET /v1/styles lists them)"),
                         "style_id");
      }
    }
  }

  auto width = studio.bucket_width(s.text, s.clamp_overflow);
  if (!width) return api_error(422, "invalid_text", width.status().to_string(), text_field);
  s.bucket_width = *width;
  return {};
}

}  // namespace quill::serve
