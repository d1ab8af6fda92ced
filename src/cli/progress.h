// A one-line progress bar on stderr with items/s, drawn only when stderr is a terminal (so logs
// and pipes stay clean). Not thread-safe; call from one thread.
#pragma once

#include <chrono>
#include <string>

namespace quill::cli {

class Progress {
 public:
  Progress(std::string label, int total, std::string unit = "steps");
  ~Progress();
  void update(int done);
  void finish();
  double rate() const;  // units per second so far

 private:
  std::string label_, unit_;
  int total_, done_ = 0;
  bool tty_, finished_ = false;
  std::chrono::steady_clock::time_point start_;
};

}  // namespace quill::cli
