// Files served from the binary (compiled in by cmake/QuillEmbed.cmake from src/serve/assets/).
#pragma once

#include <string_view>

namespace quill::serve {

std::string_view studio_page_html();  // GET /
std::string_view openapi_json();      // GET /openapi.json

}  // namespace quill::serve
