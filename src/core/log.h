// Leveled logging to stderr. Level from QUILL_LOG (error|warn|info|debug|trace), default warn;
// the CLI's -v raises it. Messages are built only when the level is enabled.
#pragma once

#include "quill/status.h"

namespace quill {

enum class LogLevel { kError = 0, kWarn = 1, kInfo = 2, kDebug = 3, kTrace = 4 };

LogLevel log_level();
void set_log_level(LogLevel level);
bool parse_log_level(const char* s, LogLevel* out);
void log_write(LogLevel level, const std::string& message);

template <typename... Args>
void log_error(const Args&... a) {
  if (log_level() >= LogLevel::kError) log_write(LogLevel::kError, str_cat(a...));
}
template <typename... Args>
void log_warn(const Args&... a) {
  if (log_level() >= LogLevel::kWarn) log_write(LogLevel::kWarn, str_cat(a...));
}
template <typename... Args>
void log_info(const Args&... a) {
  if (log_level() >= LogLevel::kInfo) log_write(LogLevel::kInfo, str_cat(a...));
}
template <typename... Args>
void log_debug(const Args&... a) {
  if (log_level() >= LogLevel::kDebug) log_write(LogLevel::kDebug, str_cat(a...));
}

}  // namespace quill
