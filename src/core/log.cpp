#include "core/log.h"

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>

namespace quill {

namespace {
std::atomic<int> g_level{-1};
const char* kNames[] = {"error", "warn", "info", "debug", "trace"};
}  // namespace

bool parse_log_level(const char* s, LogLevel* out) {
  for (int i = 0; i < 5; ++i)
    if (std::strcmp(s, kNames[i]) == 0) {
      *out = LogLevel(i);
      return true;
    }
  return false;
}

LogLevel log_level() {
  int l = g_level.load(std::memory_order_relaxed);
  if (l < 0) {
    LogLevel parsed = LogLevel::kWarn;
    if (const char* e = std::getenv("QUILL_LOG")) parse_log_level(e, &parsed);
    l = int(parsed);
    g_level.store(l, std::memory_order_relaxed);
  }
  return LogLevel(l);
}

void set_log_level(LogLevel level) { g_level.store(int(level), std::memory_order_relaxed); }

void log_write(LogLevel level, const std::string& message) {
  static std::mutex mu;
  std::lock_guard<std::mutex> lock(mu);
  std::fprintf(stderr, "[quill %s] %s\n", kNames[int(level)], message.c_str());
}

}  // namespace quill
