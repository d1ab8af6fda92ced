#include "core/memory_stats.h"

#include <sys/resource.h>
#include <unistd.h>

#include <cstdio>

namespace quill {

int64_t peak_rss_bytes() {
  struct rusage ru {};
  getrusage(RUSAGE_SELF, &ru);
  return int64_t(ru.ru_maxrss) * 1024;  // KiB on Linux
}

int64_t current_rss_bytes() {
  FILE* f = std::fopen("/proc/self/statm", "r");
  if (!f) return -1;
  long pages_total = 0, pages_resident = 0;
  const int n = std::fscanf(f, "%ld %ld", &pages_total, &pages_resident);
  std::fclose(f);
  return n == 2 ? int64_t(pages_resident) * int64_t(sysconf(_SC_PAGESIZE)) : -1;
}

}  // namespace quill
