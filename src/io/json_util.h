// JSON from untrusted files (safetensors headers, config.json, index.json, GGUF metadata).
#pragma once

#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

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

namespace json_detail {
// v as T, or false when v is not exactly a T: integers must be JSON integers inside T's range (a
// float such as 2.5 or 1e70 is refused, not truncated, and never converted out of range), floats
// finite JSON numbers, bools booleans, strings strings, vectors arrays of such values.
template <typename T>
bool json_to(const nlohmann::json& v, T& out) {
  if constexpr (std::is_same_v<T, bool>) {
    if (!v.is_boolean()) return false;
    out = v.get<bool>();
  } else if constexpr (std::is_integral_v<T>) {
    if (v.is_number_unsigned()) {
      const uint64_t u = v.get<uint64_t>();
      if (u > uint64_t(std::numeric_limits<T>::max())) return false;
      out = T(u);
    } else if (v.is_number_integer()) {
      const int64_t i = v.get<int64_t>();
      if (i < int64_t(std::numeric_limits<T>::min()) ||
          (std::is_signed_v<T> && i > int64_t(std::numeric_limits<T>::max())) || (!std::is_signed_v<T> && i < 0))
        return false;
      out = T(i);
    } else {
      return false;
    }
  } else if constexpr (std::is_floating_point_v<T>) {
    if (!v.is_number()) return false;
    const double d = v.get<double>();
    if (!std::isfinite(d)) return false;
    out = T(d);
  } else if constexpr (std::is_same_v<T, std::string>) {
    if (!v.is_string()) return false;
    out = v.get<std::string>();
  } else {  // std::vector<E>
    if (!v.is_array()) return false;
    T items(v.size());
    for (size_t i = 0; i < v.size(); ++i)
      if (!json_to(v[i], items[i])) return false;
    out = std::move(items);
  }
  return true;
}
template <typename T>
std::string json_type_name() {
  if constexpr (std::is_same_v<T, bool>)
    return "true or false";
  else if constexpr (std::is_integral_v<T>)
    return "an integer in range";
  else if constexpr (std::is_floating_point_v<T>)
    return "a finite number";
  else if constexpr (std::is_same_v<T, std::string>)
    return "a string";
  else
    return "a list, each " + json_type_name<typename T::value_type>();
}
}  // namespace json_detail

// j[key] into `out` when present and not null (absent or null keeps `out`), checked as
// json_detail::json_to says; the error names `what` ("scheduler config") and the key.
template <typename T>
Status read_json_key(const nlohmann::json& j, const char* key, T& out, std::string_view what) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return Status::ok();
  if (!json_detail::json_to(*it, out))
    return invalid_file(what, " key '", key, "' must be ", json_detail::json_type_name<T>(), ", got ",
                        dump_json(*it).substr(0, 80));
  return Status::ok();
}

}  // namespace quill
