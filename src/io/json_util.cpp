#include "io/json_util.h"

#include <set>
#include <vector>

namespace quill {

namespace {
struct JsonRejected {
  std::string message;
};
}  // namespace

Result<nlohmann::json> parse_json_checked(std::string_view text, std::string_view what, int max_depth) {
  using nlohmann::json;
  // keys_at[d] holds the keys seen so far in the object whose members are at depth d.
  std::vector<std::set<std::string>> keys_at;
  auto callback = [&](int depth, json::parse_event_t event, json& parsed) -> bool {
    switch (event) {
      case json::parse_event_t::object_start:
      case json::parse_event_t::array_start:
        if (depth >= max_depth) throw JsonRejected{str_cat("nested deeper than ", max_depth, " levels")};
        if (event == json::parse_event_t::object_start) {
          if (keys_at.size() < size_t(depth) + 2) keys_at.resize(size_t(depth) + 2);
          keys_at[size_t(depth) + 1].clear();
        }
        break;
      case json::parse_event_t::key: {
        if (keys_at.size() <= size_t(depth)) keys_at.resize(size_t(depth) + 1);
        const std::string& key = parsed.get_ref<const std::string&>();
        if (!keys_at[size_t(depth)].insert(key).second) throw JsonRejected{str_cat("duplicate key \"", key, "\"")};
        break;
      }
      default:
        break;
    }
    return true;
  };
  try {
    return json::parse(text.begin(), text.end(), callback, /*allow_exceptions=*/true, /*ignore_comments=*/false);
  } catch (const JsonRejected& e) {
    return invalid_file(what, " is not acceptable JSON: ", e.message);
  } catch (const json::parse_error& e) {
    return invalid_file(what, " is not valid JSON: ", e.what());
  } catch (const json::exception& e) {
    return invalid_file(what, " is not valid JSON: ", e.what());
  }
}

std::string dump_json(const nlohmann::json& j, int indent) {
  return j.dump(indent, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace quill
