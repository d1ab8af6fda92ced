// Shapes read from untrusted files.
#pragma once

#include <cstdint>
#include <limits>

#include "quill/tensor.h"

namespace quill {

// Element count of a shape from a file, or -1 when Quill cannot hold it: a negative dimension, or
// a product of the non-zero dimensions that overflows int64. The second matters even when some
// dimension is 0 (numel 0): a Tensor's strides are products of the trailing dimensions.
inline int64_t untrusted_numel(const Shape& s) {
  int64_t nonzero = 1;
  bool empty = false;
  for (int i = 0; i < s.rank(); ++i) {
    const int64_t d = s[i];
    if (d < 0) return -1;
    if (d == 0) {
      empty = true;
      continue;
    }
    if (nonzero > std::numeric_limits<int64_t>::max() / d) return -1;
    nonzero *= d;
  }
  return empty ? 0 : nonzero;
}

}  // namespace quill
