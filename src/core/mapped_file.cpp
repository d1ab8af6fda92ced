#include "core/mapped_file.h"

#include "core/input_files.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <map>
#include <mutex>

namespace quill {
namespace {
// Live maps by start address (end beside), for release_pages; the lock also keeps a map from being
// unmapped while pages of it are given back.
struct LiveMaps {
  std::mutex mu;
  std::map<uintptr_t, uintptr_t> spans;
};
LiveMaps& live_maps() {
  static auto* m = new LiveMaps;  // never destroyed: a MappedFile may outlive static destruction order
  return *m;
}
}  // namespace

Result<std::shared_ptr<MappedFile>> MappedFile::open(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    const int err = errno;
    auto st = (err == ENOENT ? not_found("cannot open: ", std::strerror(err))
                             : io_error("cannot open: ", std::strerror(err)));
    return st.with_file(path);
  }
  struct stat sb {};
  if (::fstat(fd, &sb) != 0) {
    const int err = errno;
    ::close(fd);
    return io_error("cannot stat: ", std::strerror(err)).with_file(path);
  }
  if (!S_ISREG(sb.st_mode)) {
    ::close(fd);
    return invalid_file("not a regular file").with_file(path);
  }
  note_input_file(uint64_t(sb.st_dev), uint64_t(sb.st_ino));
  std::shared_ptr<MappedFile> f(new MappedFile());
  f->path_ = path;
  f->size_ = uint64_t(sb.st_size);
  if (f->size_ > 0) {
    void* p = ::mmap(nullptr, size_t(f->size_), PROT_READ, MAP_PRIVATE, fd, 0);
    if (p == MAP_FAILED) {
      const int err = errno;
      ::close(fd);
      return io_error("mmap failed: ", std::strerror(err)).with_file(path);
    }
    f->data_ = static_cast<const uint8_t*>(p);
    LiveMaps& m = live_maps();
    std::lock_guard<std::mutex> lock(m.mu);
    m.spans[reinterpret_cast<uintptr_t>(p)] = reinterpret_cast<uintptr_t>(p) + size_t(f->size_);
  }
  ::close(fd);
  return f;
}

MappedFile::~MappedFile() {
  if (!data_) return;
  LiveMaps& m = live_maps();
  std::lock_guard<std::mutex> lock(m.mu);
  m.spans.erase(reinterpret_cast<uintptr_t>(data_));
  ::munmap(const_cast<uint8_t*>(data_), size_t(size_));
}

bool MappedFile::release_pages(const void* p, size_t bytes) {
  const auto begin = reinterpret_cast<uintptr_t>(p), end = begin + bytes;
  LiveMaps& m = live_maps();
  std::lock_guard<std::mutex> lock(m.mu);
  auto it = m.spans.upper_bound(begin);
  if (it == m.spans.begin()) return false;
  --it;
  if (begin < it->first || end > it->second || end < begin) return false;
  const auto page = uintptr_t(::sysconf(_SC_PAGESIZE));
  const uintptr_t first = (begin + page - 1) / page * page, last = end / page * page;
  if (first < last) ::madvise(reinterpret_cast<void*>(first), last - first, MADV_DONTNEED);
  return true;
}

}  // namespace quill
