#include "cli/progress.h"

#include <unistd.h>

#include <cstdio>

namespace quill::cli {

Progress::Progress(std::string label, int total, std::string unit)
    : label_(std::move(label)),
      unit_(std::move(unit)),
      total_(total),
      tty_(isatty(STDERR_FILENO) != 0),
      start_(std::chrono::steady_clock::now()) {}

Progress::~Progress() { finish(); }

double Progress::rate() const {
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  return s > 0 ? done_ / s : 0.0;
}

void Progress::update(int done) {
  done_ = done;
  if (!tty_) return;
  constexpr int kWidth = 30;
  const int filled = total_ > 0 ? done * kWidth / total_ : kWidth;
  std::string bar(size_t(filled), '#');
  bar.resize(kWidth, ' ');
  std::fprintf(stderr, "\r%s [%s] %d/%d %s, %.2f %s/s", label_.c_str(), bar.c_str(), done, total_, unit_.c_str(),
               rate(), unit_.c_str());
  std::fflush(stderr);
}

void Progress::finish() {
  if (finished_) return;
  finished_ = true;
  if (tty_ && done_ > 0) std::fprintf(stderr, "\n");
}

}  // namespace quill::cli
