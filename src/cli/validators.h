// CLI11 validators for numbers a user types: CLI::Range lets "nan" through (every comparison with
// NaN is false), and an unsigned option silently wraps "-1" or clamps "1e23". These reject both
// with a usage error (exit 2) that names the accepted range.
#pragma once

#include <CLI/CLI.hpp>

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <string>

namespace quill::cli {

// A finite decimal number in [lo, hi].
inline CLI::Validator FiniteRange(double lo, double hi) {
  return CLI::Validator(
      [lo, hi](std::string& s) -> std::string {
        char* end = nullptr;
        errno = 0;
        const double v = std::strtod(s.c_str(), &end);
        if (s.empty() || *end != '\0' || errno == ERANGE || !std::isfinite(v))
          return "'" + s + "' is not a finite number";
        if (!(v >= lo && v <= hi))
          return "'" + s + "' is outside [" + CLI::detail::to_string(lo) + ", " + CLI::detail::to_string(hi) + "]";
        return {};
      },
      "FINITE in [" + CLI::detail::to_string(lo) + ", " + CLI::detail::to_string(hi) + "]");
}

// A seed: decimal digits only, 0 .. 2^64 - 1.
inline CLI::Validator Seed64() {
  return CLI::Validator(
      [](std::string& s) -> std::string {
        if (s.empty() || s.find_first_not_of("0123456789") != std::string::npos)
          return "'" + s + "' is not a seed (a whole number from 0 to 18446744073709551615)";
        errno = 0;
        std::strtoull(s.c_str(), nullptr, 10);
        if (errno == ERANGE) return "'" + s + "' is larger than 18446744073709551615";
        return {};
      },
      "UINT64");
}

}  // namespace quill::cli
