// Batch files for `quill line` and friends: one text per line, read as a stream with bounded
// memory (a per-line and a total size limit; regular files and FIFOs only, so /dev/zero or a
// directory is a clear error), and the output names built from them.
#pragma once

#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>

#include "quill/status.h"

namespace quill::cli {

inline constexpr size_t kMaxBatchLineBytes = 4096;                 // one line of text
inline constexpr uint64_t kMaxBatchFileBytes = uint64_t(1) << 30;  // the whole file

class BatchLines {
 public:
  // Opens `path` (a regular file or a FIFO; "-" is not accepted) and notes it as an input.
  static Result<std::unique_ptr<BatchLines>> open(const std::string& path);
  ~BatchLines();

  // The next non-blank line and its 1-based line number in the file; false at the end. Lines
  // keep their text as written (a trailing '\r' is dropped).
  Result<bool> next(std::string* text, int64_t* line_number);
  // Non-blank lines in a regular file (one pass; -1 for a FIFO, which can be read only once).
  static Result<int64_t> count(const std::string& path);

 private:
  BatchLines() = default;
  std::FILE* f_ = nullptr;
  std::string path_;
  int64_t line_ = 0;
  uint64_t bytes_ = 0;
};

// The output for line `number` of a batch: `<stem>_<number><ext>` with the number zero-padded to
// four digits, where only the final path component is split (`out/v1.2/line.png` ->
// `out/v1.2/line_0007.png`; no extension -> ".png").
std::string numbered_output(const std::string& path, int64_t number);

}  // namespace quill::cli
