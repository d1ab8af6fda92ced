// JSON from untrusted files (safetensors headers, config.json, index.json, GGUF metadata).
#pragma once

#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "quill/status.h"

namespace quill {

// Parses `text`, rejecting (as invalid_file, with the byte position) malformed JSON, nesting
// deeper than `max_depth` (recursive consumers such as dump() would overflow the stack) and
// duplicate keys in any object (nlohmann would silently keep the last one, so a file could say
// two things about one tensor). `what` names the document in messages: "header", "config.json".
Result<nlohmann::json> parse_json_checked(std::string_view text, std::string_view what, int max_depth = 64);

// dump() that never throws: invalid UTF-8 in strings from files is replaced, not fatal.
std::string dump_json(const nlohmann::json& j, int indent = -1);

}  // namespace quill
