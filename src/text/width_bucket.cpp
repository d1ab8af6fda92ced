#include "text/width_bucket.h"

#include <algorithm>

namespace quill {

Result<WidthBucket> width_bucket(int64_t natural_width, int64_t line_height, int64_t max_line_width, int64_t downscale,
                                 int64_t patch, OverflowPolicy policy) {
  if (line_height <= 0 || downscale <= 0 || patch <= 0)
    return invalid_argument("line height, downscale and patch must be positive (got ", line_height, ", ", downscale,
                            ", ", patch, ")");
  // Every canvas width is a multiple of 16, so this is the condition for all of them to split into
  // whole latents and tokens; checked up front so a config fails on every line, not on some.
  if (downscale > 16 || patch > 16 || 16 % (downscale * patch) != 0)
    return invalid_argument("downscale x patch = ", downscale * patch,
                            " must divide 16 (canvas widths are multiples of 16; got downscale ", downscale, ", patch ",
                            patch, ")");
  if (max_line_width <= 0 || max_line_width % 16)
    return invalid_argument("max line width ", max_line_width, " must be a positive multiple of 16");
  const int64_t min_width = round_up(line_height, 16);
  if (max_line_width < min_width)
    return invalid_argument("max line width ", max_line_width, " is below the minimum canvas width ", min_width,
                            " (line height rounded up to 16)");
  if (natural_width < 0) return invalid_argument("natural width ", natural_width, " is negative");
  WidthBucket b;
  b.natural_width = natural_width;
  int64_t w = round_up(natural_width, 16);
  if (w > max_line_width) {
    if (policy == OverflowPolicy::kError)
      return out_of_range("the line is ", natural_width, " px wide but the model's max line width is ", max_line_width,
                          " px; shorten it, or clip it with --overflow clamp");
    w = max_line_width;
    b.clamped = true;
  }
  b.canvas_width = std::max(w, min_width);
  b.latent_width = b.canvas_width / downscale;
  b.tokens = b.latent_width / patch;
  return b;
}

}  // namespace quill
