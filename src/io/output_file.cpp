#include "io/output_file.h"

#include <fcntl.h>
#include <limits.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

namespace quill {

namespace {

const char* kind_of(mode_t m) {
  if (S_ISDIR(m)) return "a directory";
  if (S_ISCHR(m)) return "a character device";
  if (S_ISBLK(m)) return "a block device";
  if (S_ISFIFO(m)) return "a FIFO";
  if (S_ISSOCK(m)) return "a socket";
  return "not a regular file";
}

// The file the bytes will replace: `path` itself, or the final target of a symlink chain.
Result<std::string> resolve_target(const std::string& path) {
  struct stat lsb {};
  if (::lstat(path.c_str(), &lsb) != 0) {
    if (errno == ENOENT) return path;  // a new file
    return io_error("cannot inspect the output path: ", std::strerror(errno)).with_file(path);
  }
  if (!S_ISLNK(lsb.st_mode)) return path;
  // stat fails with ELOOP on a cycle of links, so the recursion below always ends; a dangling
  // link (ENOENT) is fine: its target is created.
  struct stat sb {};
  if (::stat(path.c_str(), &sb) != 0 && errno != ENOENT)
    return io_error("cannot follow the output symlink: ", std::strerror(errno)).with_file(path);
  char buf[PATH_MAX];
  const ssize_t n = ::readlink(path.c_str(), buf, sizeof(buf) - 1);
  if (n < 0) return io_error("cannot read the output symlink: ", std::strerror(errno)).with_file(path);
  buf[n] = '\0';
  std::string target(buf);
  if (!target.empty() && target[0] != '/') {
    const auto slash = path.rfind('/');
    if (slash != std::string::npos) target = path.substr(0, slash + 1) + target;
  }
  return resolve_target(target);
}

std::string dir_of(const std::string& path) {
  const auto slash = path.rfind('/');
  return slash == std::string::npos ? std::string(".") : slash == 0 ? std::string("/") : path.substr(0, slash);
}

Result<std::string> checked_target(const std::string& path) {
  if (path.empty()) return invalid_argument("the output path is empty");
  QUILL_ASSIGN_OR_RETURN(std::string target, resolve_target(path));
  struct stat sb {};
  if (::stat(target.c_str(), &sb) == 0) {
    if (!S_ISREG(sb.st_mode))
      return io_error("refusing to write over ", kind_of(sb.st_mode), " (outputs replace regular files only)")
          .with_file(path);
    if (is_input_file(uint64_t(sb.st_dev), uint64_t(sb.st_ino)))
      return io_error("refusing to write over a file this command reads as input").with_file(path);
  } else if (errno != ENOENT) {
    return io_error("cannot inspect the output path: ", std::strerror(errno)).with_file(path);
  }
  return target;
}

}  // namespace

Status check_output_path(const std::string& path) { return checked_target(path).status(); }

Status write_output_file(const std::string& path, FunctionRef<Status(std::FILE*)> write) {
  QUILL_ASSIGN_OR_RETURN(std::string target, checked_target(path));
  std::string tmp = dir_of(target) + "/.quill-XXXXXX";
  const int fd = ::mkstemp(tmp.data());
  if (fd < 0)
    return io_error("cannot open for writing (a temp file beside the output): ", std::strerror(errno)).with_file(path);
  ::fchmod(fd, 0644);
  std::FILE* f = ::fdopen(fd, "wb");
  if (!f) {
    const int err = errno;
    ::close(fd);
    ::unlink(tmp.c_str());
    return io_error("cannot open the temp file: ", std::strerror(err)).with_file(path);
  }
  Status st = write(f);
  int err = errno;
  if (st.is_ok() && (std::fflush(f) != 0 || std::ferror(f))) {
    err = errno;
    st = io_error("cannot write: ", std::strerror(err));
  }
  if (st.is_ok() && ::fsync(::fileno(f)) != 0) st = io_error("cannot sync: ", std::strerror(errno));
  if (std::fclose(f) != 0 && st.is_ok()) st = io_error("cannot write: ", std::strerror(errno));
  // Checked again right before the rename: the path may have changed while we wrote.
  if (st.is_ok()) st = checked_target(path).status();
  if (st.is_ok() && std::rename(tmp.c_str(), target.c_str()) != 0)
    st = io_error("cannot move the output into place: ", std::strerror(errno));
  if (!st.is_ok()) {
    ::unlink(tmp.c_str());  // only our own temp file
    st.with_file(path);     // keeps a file the error already names
  }
  return st;
}

}  // namespace quill
