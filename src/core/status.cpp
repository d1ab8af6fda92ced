#include "quill/status.h"

#include <iterator>

namespace quill {

const char* error_code_name(ErrorCode code) {
  // In ErrorCode's order.
  static constexpr const char* kNames[] = {"ok",           "invalid argument", "invalid file", "not found",
                                           "unsupported",  "i/o error",        "out of range", "internal error",
                                           "device error", "cancelled",       "non-finite result"};
  static_assert(std::size(kNames) == size_t(ErrorCode::kNonFinite) + 1, "a name for every ErrorCode");
  const auto i = size_t(code);
  return i < std::size(kNames) ? kNames[i] : "unknown error";
}

bool is_caller_error(ErrorCode code) {
  switch (code) {
    case ErrorCode::kInvalidArgument:
    case ErrorCode::kInvalidFile:
    case ErrorCode::kNotFound:
    case ErrorCode::kOutOfRange:
      return true;
    default:
      return false;
  }
}

Status& Status::with_file(const std::string& path) {
  if (file_.empty()) file_ = path;
  return *this;
}
Status& Status::with_tensor(const std::string& name) {
  if (tensor_.empty()) tensor_ = name;
  return *this;
}
Status& Status::with_expected_found(const std::string& expected, const std::string& found) {
  expected_ = expected;
  found_ = found;
  return *this;
}
Status& Status::with_context(const std::string& what) {
  context_ = context_.empty() ? what : what + ": " + context_;
  return *this;
}

std::string Status::to_string() const {
  if (is_ok()) return "ok";
  std::string s;
  if (!context_.empty()) s += context_ + ": ";
  if (!file_.empty()) s += "file '" + file_ + "': ";
  if (!tensor_.empty()) s += "tensor '" + tensor_ + "': ";
  s += message_;
  if (!expected_.empty() || !found_.empty()) s += " (expected " + expected_ + ", found " + found_ + ")";
  return s;
}

}  // namespace quill
