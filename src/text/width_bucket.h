// Width buckets for glyph lines: canvas width = natural width rounded up to a multiple of 16,
// clamped to [round_up(line_height, 16), max_line_width]; latent width = canvas / downscale;
// tokens = latent / patch. One compiled plan exists per bucket actually requested.
#pragma once

#include <cstdint>

#include "quill/status.h"

namespace quill {

enum class OverflowPolicy { kError, kClamp };

struct WidthBucket {
  int64_t natural_width = 0;  // pixels the shaped text needs (with margins)
  int64_t canvas_width = 0;   // pixels, multiple of 16
  int64_t latent_width = 0;   // canvas / downscale
  int64_t tokens = 0;         // latent / patch: image tokens per row = content tokens
  bool clamped = false;       // the text was wider than max_line_width and is clipped
};

inline int64_t round_up(int64_t v, int64_t m) { return (v + m - 1) / m * m; }

// Errors (kInvalidArgument): max_line_width not a positive multiple of 16 or below the minimum
// width; downscale x patch not dividing 16 (some canvas would not split into whole tokens).
// natural_width over the maximum with OverflowPolicy::kError is kOutOfRange.
Result<WidthBucket> width_bucket(int64_t natural_width, int64_t line_height, int64_t max_line_width, int64_t downscale,
                                 int64_t patch, OverflowPolicy policy);

}  // namespace quill
