// Shared by the fuzz targets: touch every byte a view claims, so a view that reaches past the
// input (libFuzzer hands us an exactly-sized heap copy) is an ASan report, not a silent read.
#pragma once

#include <cstdint>
#include <cstdio>
#include <cstdlib>

#include "quill/tensor.h"

namespace quill::fuzz {

inline uint8_t touch(const Tensor& t) {
  const int64_t n = t.nbytes();
  if (n < 0) {
    std::fprintf(stderr, "view of %s has no byte size\n", t.describe().c_str());
    std::abort();
  }
  const auto* p = static_cast<const volatile uint8_t*>(t.data());
  uint8_t acc = 0;
  for (int64_t i = 0; i < n; ++i) acc = uint8_t(acc ^ p[i]);
  return acc;
}

[[noreturn]] inline void fail(const char* what) {
  std::fprintf(stderr, "fuzz invariant broken: %s\n", what);
  std::abort();
}

}  // namespace quill::fuzz
