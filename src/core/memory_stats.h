// Process memory numbers for timing summaries and benchmarks.
#pragma once

#include <cstdint>

namespace quill {

// Peak resident set size of this process so far, in bytes (getrusage ru_maxrss).
int64_t peak_rss_bytes();
// Current resident set size in bytes (from /proc/self/statm), or -1 when unavailable.
int64_t current_rss_bytes();

}  // namespace quill
