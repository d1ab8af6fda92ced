#include "quill/status.h"

namespace quill {

const char* error_code_name(ErrorCode code) {
  switch (code) {
    case ErrorCode::kOk:
      return "ok";
    case ErrorCode::kInvalidArgument:
      return "invalid argument";
    case ErrorCode::kInvalidFile:
      return "invalid file";
    case ErrorCode::kNotFound:
      return "not found";
    case ErrorCode::kUnsupported:
      return "unsupported";
    case ErrorCode::kIo:
      return "i/o error";
    case ErrorCode::kOutOfRange:
      return "out of range";
    case ErrorCode::kInternal:
      return "internal error";
    case ErrorCode::kDevice:
      return "device error";
    case ErrorCode::kCancelled:
      return "cancelled";
  }
  return "unknown error";
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
