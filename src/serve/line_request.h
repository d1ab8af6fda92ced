// Request bodies -> checked LineJobSpecs. One parser serves POST /v1/lines and /v1/jobs (JSON or
// multipart/form-data with the style as a file part) and the OpenAI-compatible
// /v1/images/generations (`prompt`, `n`, `response_format`, `size`, with Quill's settings as extra
// top-level fields). Every refusal names the field and the limit.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "quill/line_studio.h"
#include "serve/api_error.h"
#include "serve/job.h"
#include "serve/serve_options.h"
#include "serve/style_store.h"

namespace quill::serve {

enum class RequestKind { kLines, kOpenAIImages };

struct ParsedLineRequest {
  LineJobSpec spec;       // seed of the first image
  int n = 1;              // images (OpenAI `n`): seeds seed, seed + 1, ...
  bool json_response = false;
};

// A multipart form as plain fields (strings) plus file parts (bytes).
struct FormData {
  std::map<std::string, std::string> fields;
  std::map<std::string, std::vector<uint8_t>> files;
};

// Form fields become JSON values of the types the JSON API takes (numbers, booleans), so both
// forms go through one validator; `files["style"]` is the style image.
ApiError form_to_json(const FormData& form, RequestKind kind, nlohmann::json* out);

ApiError parse_line_request(const nlohmann::json& body, const std::vector<uint8_t>* style_file, RequestKind kind,
                            const ServeOptions& limits, LineStudio& studio, StyleStore& styles,
                            uint64_t random_seed, ParsedLineRequest* out);

}  // namespace quill::serve
