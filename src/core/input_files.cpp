#include "core/input_files.h"

#include <sys/stat.h>

#include <mutex>
#include <set>
#include <utility>

namespace quill {

namespace {
std::mutex g_mu;
std::set<std::pair<uint64_t, uint64_t>>& noted() {
  static std::set<std::pair<uint64_t, uint64_t>> s;
  return s;
}
}  // namespace

void note_input_file(uint64_t device, uint64_t inode) {
  std::lock_guard<std::mutex> lock(g_mu);
  noted().insert({device, inode});
}

void note_input_file(const std::string& path) {
  struct stat sb {};
  if (::stat(path.c_str(), &sb) == 0) note_input_file(uint64_t(sb.st_dev), uint64_t(sb.st_ino));
}

bool is_input_file(uint64_t device, uint64_t inode) {
  std::lock_guard<std::mutex> lock(g_mu);
  return noted().count({device, inode}) != 0;
}

}  // namespace quill
