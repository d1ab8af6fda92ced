// Human-readable counts and byte sizes for CLI reports ("2.32 M", "4.50 MiB").
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>

namespace quill::cli {

inline std::string human_units(double v, const char* const* units, double step) {
  int u = 0;
  while (v >= step && units[u + 1]) v /= step, ++u;
  char buf[64];
  std::snprintf(buf, sizeof buf, u ? "%.2f %s" : "%.0f%s", v, units[u]);
  return buf;
}
inline std::string human_count(int64_t n) {
  static const char* const units[] = {"", "K", "M", "B", "T", nullptr};
  return human_units(double(n), units, 1000.0);
}
inline std::string human_bytes(int64_t n) {
  static const char* const units[] = {" B", "KiB", "MiB", "GiB", "TiB", nullptr};
  return human_units(double(n), units, 1024.0);
}

}  // namespace quill::cli
