// Errors as values: a Status carries a message plus the context a user needs to act on it
// (file, tensor name, expected vs found). Result<T> is a value or a Status.
#pragma once

#include <cassert>
#include <optional>
#include <sstream>
#include <string>
#include <utility>
#include <variant>

namespace quill {

enum class ErrorCode {
  kOk = 0,
  kInvalidArgument,  // bad user input (CLI arguments, shapes the caller passed)
  kInvalidFile,      // a file is corrupt, truncated, hostile or of the wrong kind
  kNotFound,         // a file, tensor or key is missing
  kUnsupported,      // valid, but not implemented (never silently ignored)
  kIo,               // the OS refused (open, mmap, write)
  kOutOfRange,       // a size or count beyond what Quill accepts
  kInternal,         // a bug in Quill
  kDevice,           // an accelerator error (CUDA); callers may fall back to CPU
  kCancelled,        // the caller cancelled the request (a cancel flag was set)
  kNonFinite,        // the computation produced NaN or Inf from finite inputs (weights or settings overflow)
};

// Whether the error is the caller's: its arguments or the files it passed are invalid (the CLI
// exits 2, a server answers 4xx). Everything else means the run failed (exit 1, 5xx).
bool is_caller_error(ErrorCode code);

const char* error_code_name(ErrorCode code);

class Status {
 public:
  Status() = default;
  Status(ErrorCode code, std::string message) : code_(code), message_(std::move(message)) {}

  static Status ok() { return {}; }
  bool is_ok() const { return code_ == ErrorCode::kOk; }
  explicit operator bool() const { return is_ok(); }
  ErrorCode code() const { return code_; }
  const std::string& message() const { return message_; }

  // Context builders; each returns *this so they chain:
  //   return invalid_file("bad header").with_file(path).with_tensor(name);
  Status& with_file(const std::string& path);
  Status& with_tensor(const std::string& name);
  Status& with_expected_found(const std::string& expected, const std::string& found);
  Status& with_context(const std::string& what);  // free-form "while ..." prefix

  // "file 'a.safetensors': tensor 'x': <message> (expected [2,3], found [2,4])"
  std::string to_string() const;

 private:
  ErrorCode code_ = ErrorCode::kOk;
  std::string message_;
  std::string file_, tensor_, expected_, found_, context_;
};

// Concatenate anything streamable into one string: str_cat("got ", n, " tensors").
template <typename... Args>
std::string str_cat(const Args&... args) {
  std::ostringstream os;
  (os << ... << args);
  return os.str();
}

template <typename... Args>
Status make_error(ErrorCode code, const Args&... args) {
  return Status(code, str_cat(args...));
}
template <typename... Args>
Status invalid_argument(const Args&... a) {
  return make_error(ErrorCode::kInvalidArgument, a...);
}
template <typename... Args>
Status invalid_file(const Args&... a) {
  return make_error(ErrorCode::kInvalidFile, a...);
}
template <typename... Args>
Status not_found(const Args&... a) {
  return make_error(ErrorCode::kNotFound, a...);
}
template <typename... Args>
Status unsupported(const Args&... a) {
  return make_error(ErrorCode::kUnsupported, a...);
}
template <typename... Args>
Status io_error(const Args&... a) {
  return make_error(ErrorCode::kIo, a...);
}
template <typename... Args>
Status out_of_range(const Args&... a) {
  return make_error(ErrorCode::kOutOfRange, a...);
}
template <typename... Args>
Status non_finite(const Args&... a) {
  return make_error(ErrorCode::kNonFinite, a...);
}
template <typename... Args>
Status internal_error(const Args&... a) {
  return make_error(ErrorCode::kInternal, a...);
}

template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : v_(std::move(value)) {}        // NOLINT(google-explicit-constructor)
  Result(Status status) : v_(std::move(status)) {  // NOLINT(google-explicit-constructor)
    assert(!std::get<Status>(v_).is_ok() && "Result constructed from an ok Status");
  }

  bool is_ok() const { return std::holds_alternative<T>(v_); }
  explicit operator bool() const { return is_ok(); }
  const Status& status() const {
    static const Status kOk;
    return is_ok() ? kOk : std::get<Status>(v_);
  }
  Status take_status() { return is_ok() ? Status() : std::move(std::get<Status>(v_)); }

  T& value() & {
    assert(is_ok());
    return std::get<T>(v_);
  }
  const T& value() const& {
    assert(is_ok());
    return std::get<T>(v_);
  }
  T&& value() && {
    assert(is_ok());
    return std::get<T>(std::move(v_));
  }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }

 private:
  std::variant<T, Status> v_;
};

}  // namespace quill

#define QUILL_CONCAT_INNER(a, b) a##b
#define QUILL_CONCAT(a, b) QUILL_CONCAT_INNER(a, b)

// Return the Status from the enclosing function if `expr` (a Status) failed.
#define QUILL_RETURN_IF_ERROR(expr)                   \
  do {                                                \
    ::quill::Status quill_status_ = (expr);           \
    if (!quill_status_.is_ok()) return quill_status_; \
  } while (0)

// `QUILL_ASSIGN_OR_RETURN(auto x, f());` unwraps a Result or returns its Status.
#define QUILL_ASSIGN_OR_RETURN(lhs, expr) QUILL_ASSIGN_OR_RETURN_IMPL(QUILL_CONCAT(quill_result_, __LINE__), lhs, expr)
#define QUILL_ASSIGN_OR_RETURN_IMPL(tmp, lhs, expr) \
  auto tmp = (expr);                                \
  if (!tmp.is_ok()) return tmp.take_status();       \
  lhs = std::move(tmp).value()
