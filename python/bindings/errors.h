// Quill's Status as Python exceptions: QuillError (a RuntimeError) and one subclass per error kind
// that also derives from the matching built-in (ValueError, FileNotFoundError, ...), so callers can
// catch either. Raise only while holding the GIL.
#pragma once

#include <nanobind/nanobind.h>

#include <utility>

#include "quill/status.h"

namespace quill::py {

void register_errors(nanobind::module_& m);

// Throws nanobind::python_error carrying the exception for `status` (message: Status::to_string()).
[[noreturn]] void raise(const Status& status);

inline void check(const Status& status) {
  if (!status) raise(status);
}

template <typename T>
T unwrap(Result<T>&& r) {
  if (!r) raise(r.status());
  return std::move(r).value();
}

// Runs `f` (returning a Result) with the GIL released, then unwraps its value or raises.
template <typename F>
auto call_without_gil(F&& f) {
  auto r = [&] {
    nanobind::gil_scoped_release release;
    return f();
  }();
  return unwrap(std::move(r));
}

}  // namespace quill::py
