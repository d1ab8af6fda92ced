// An HTTP error as the API reports it: {"error": {"code", "message", "field"}} with its status.
#pragma once

#include <string>

#include "quill/status.h"

namespace quill::serve {

struct ApiError {
  int status = 0;  // 0: no error
  std::string code, message, field;
  explicit operator bool() const { return status != 0; }
};

inline ApiError api_error(int status, std::string code, std::string message, std::string field = {}) {
  return {status, std::move(code), std::move(message), std::move(field)};
}

// A library Status as the API's error: the caller's mistakes are 422 (400 for malformed input
// files), everything else 500.
inline ApiError api_error_from(const Status& s, std::string field = {}) {
  switch (s.code()) {
    case ErrorCode::kInvalidArgument:
    case ErrorCode::kOutOfRange:
    case ErrorCode::kNotFound:
      return api_error(422, "invalid_value", s.to_string(), std::move(field));
    case ErrorCode::kInvalidFile:
    case ErrorCode::kUnsupported:
      return api_error(422, "invalid_image", s.to_string(), std::move(field));
    case ErrorCode::kCancelled:
      return api_error(409, "cancelled", s.to_string(), std::move(field));
    default:
      return api_error(500, "internal", s.to_string(), std::move(field));
  }
}

}  // namespace quill::serve
