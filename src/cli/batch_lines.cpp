#include "cli/batch_lines.h"

#include <sys/stat.h>

#include <cerrno>
#include <cstring>

#include "core/input_files.h"

namespace quill::cli {

namespace {
Status check_kind(const std::string& path, struct stat* sb) {
  if (::stat(path.c_str(), sb) != 0) {
    if (errno == ENOENT) return not_found("the batch file does not exist").with_file(path);
    return io_error("cannot read the batch file: ", std::strerror(errno)).with_file(path);
  }
  if (S_ISDIR(sb->st_mode)) return invalid_argument("the batch file is a directory").with_file(path);
  if (!S_ISREG(sb->st_mode) && !S_ISFIFO(sb->st_mode))
    return invalid_argument("the batch file must be a regular file or a FIFO (not a device)").with_file(path);
  if (S_ISREG(sb->st_mode) && uint64_t(sb->st_size) > kMaxBatchFileBytes)
    return invalid_argument("the batch file is ", sb->st_size, " bytes; at most ", kMaxBatchFileBytes, " are read")
        .with_file(path);
  return Status::ok();
}
}  // namespace

Result<std::unique_ptr<BatchLines>> BatchLines::open(const std::string& path) {
  struct stat sb {};
  QUILL_RETURN_IF_ERROR(check_kind(path, &sb));
  std::unique_ptr<BatchLines> b(new BatchLines());
  b->f_ = std::fopen(path.c_str(), "rb");
  if (!b->f_) return io_error("cannot open the batch file: ", std::strerror(errno)).with_file(path);
  b->path_ = path;
  note_input_file(path);
  return b;
}

BatchLines::~BatchLines() {
  if (f_) std::fclose(f_);
}

Result<bool> BatchLines::next(std::string* text, int64_t* line_number) {
  for (;;) {
    text->clear();
    int c = 0;
    bool any = false;
    while ((c = std::fgetc(f_)) != EOF) {
      any = true;
      if (++bytes_ > kMaxBatchFileBytes)
        return invalid_argument("the batch file is longer than ", kMaxBatchFileBytes, " bytes").with_file(path_);
      if (c == '\n') break;
      if (text->size() >= kMaxBatchLineBytes)
        return invalid_argument("line ", line_ + 1, " is longer than ", kMaxBatchLineBytes, " bytes").with_file(path_);
      text->push_back(char(c));
    }
    if (std::ferror(f_)) return io_error("cannot read the batch file: ", std::strerror(errno)).with_file(path_);
    if (!any) return false;
    ++line_;
    if (!text->empty() && text->back() == '\r') text->pop_back();
    if (text->find_first_not_of(" \t") == std::string::npos) continue;  // blank: skipped, still numbered
    *line_number = line_;
    return true;
  }
}

Result<int64_t> BatchLines::count(const std::string& path) {
  struct stat sb {};
  QUILL_RETURN_IF_ERROR(check_kind(path, &sb));
  if (S_ISFIFO(sb.st_mode)) return int64_t(-1);
  QUILL_ASSIGN_OR_RETURN(auto b, open(path));
  int64_t n = 0, number = 0;
  std::string text;
  for (;;) {
    QUILL_ASSIGN_OR_RETURN(bool more, b->next(&text, &number));
    if (!more) return n;
    ++n;
  }
}

std::string numbered_output(const std::string& path, int64_t number) {
  const auto slash = path.rfind('/');
  const std::string dir = slash == std::string::npos ? "" : path.substr(0, slash + 1);
  const std::string name = slash == std::string::npos ? path : path.substr(slash + 1);
  const auto dot = name.rfind('.');
  const bool has_ext = dot != std::string::npos && dot > 0;  // ".png" alone is a stem, not an extension
  char num[32];
  std::snprintf(num, sizeof num, "_%04lld", static_cast<long long>(number));
  return dir + (has_ext ? name.substr(0, dot) : name) + num + (has_ext ? name.substr(dot) : ".png");
}

}  // namespace quill::cli
