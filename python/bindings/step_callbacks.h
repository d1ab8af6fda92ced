// What a long call does every step while the GIL is released: take the GIL briefly, call the
// Python progress callback, check for Ctrl-C and the caller's CancelToken. A callback that raises
// or returns False, and Ctrl-C, cancel the run; the Python error is re-raised once the call has
// returned (instead of Quill's Cancelled).
#pragma once

#include <nanobind/nanobind.h>

#include <atomic>
#include <optional>

namespace quill::py {

// Set from Python (token.cancel()) or any thread; read by the engine between steps.
struct CancelToken {
  std::atomic<bool> flag{false};
};

class StepGuard {
 public:
  // `progress`: a callable or None; `token`: the caller's CancelToken or null.
  StepGuard(nanobind::object progress, CancelToken* token) : progress_(std::move(progress)), token_(token) {
    if (token_ && token_->flag.load()) stop_.store(true);
  }

  // The flag to hand the engine (Request::cancel).
  const std::atomic<bool>* cancel_flag() const { return &stop_; }

  // Call with the GIL released; `make_args` builds the callback's argument (GIL held).
  template <typename MakeArgs>
  void on_step(MakeArgs&& make_args) {
    if (token_ && token_->flag.load()) stop_.store(true);
    if (error_) return;
    nanobind::gil_scoped_acquire gil;
    if (PyErr_CheckSignals() != 0) {
      error_.emplace();  // fetches the pending KeyboardInterrupt
      stop_.store(true);
      return;
    }
    if (!progress_.is_none()) {
      try {
        nanobind::object r = progress_(*make_args());
        if (r.ptr() == Py_False) stop_.store(true);
      } catch (nanobind::python_error& e) {
        error_.emplace(std::move(e));
        stop_.store(true);
      }
    }
  }

  // After the call, with the GIL held: re-raises what a callback or Ctrl-C raised.
  void rethrow_if_error() {
    if (error_) {
      nanobind::python_error e = std::move(*error_);
      error_.reset();
      throw e;
    }
  }

 private:
  nanobind::object progress_;
  CancelToken* token_;
  std::atomic<bool> stop_{false};
  std::optional<nanobind::python_error> error_;
};

}  // namespace quill::py
