// Tiled decoding, numerically the same as diffusers' AutoencoderKL.tiled_decode: latent tiles of
// tile_latent_min_size start every overlap_size latent pixels; each decoded tile is blended with
// the (already blended) tile above over blend_extent rows (blend_v), then with the tile to its left
// over blend_extent columns (blend_h), then cropped to row_limit and placed.
//
// diffusers keeps every decoded tile; here tiles are decoded row by row and only what later tiles
// read is kept: the last blend_extent rows of each tile of the previous row and the last
// blend_extent columns of the previous tile. Peak memory is one tile's decoder activations plus
// those strips, independent of the image size (beyond the output itself).
#include <algorithm>
#include <cstring>

#include "models/autoencoder_kl.h"
#include "models/autoencoder_kl_internal.h"

namespace quill {
namespace {

struct TileGrid {
  int64_t tl = 0, ts = 0, f = 1;                  // tile_latent_min_size, tile_sample_min_size, downscale
  int64_t overlap = 0, blend = 0, row_limit = 0;  // overlap_size, blend_extent, row_limit
  std::vector<int64_t> rows, cols;                // latent start of each tile row / column
  int64_t out_h = 0, out_w = 0;
  bool tiled = false;
};

std::vector<int64_t> starts(int64_t n, int64_t step) {
  std::vector<int64_t> s;
  for (int64_t i = 0; i < n; i += step) s.push_back(i);
  return s;
}

Result<TileGrid> make_grid(const AutoencoderKLConfig& c, int64_t h, int64_t w, const VaeTiling& t) {
  TileGrid g;
  g.f = c.downscale();
  g.ts = t.tile_sample_size > 0 ? t.tile_sample_size : c.sample_size;
  if (!(t.overlap >= 0.0 && t.overlap < 1.0))
    return invalid_argument("tile overlap must be in [0, 1), got ", t.overlap);
  // The same float arithmetic as diffusers (int() truncates).
  g.tl = int64_t(double(g.ts) / double(g.f));
  g.overlap = int64_t(double(g.tl) * (1.0 - t.overlap));
  g.blend = int64_t(double(g.ts) * t.overlap);
  g.row_limit = g.ts - g.blend;
  if (g.tl < 1 || g.overlap < 1 || g.row_limit < 1)
    return invalid_argument("tile size ", g.ts, " with overlap ", t.overlap, " leaves no tile (downscale ", g.f, ")");
  g.tiled = h > g.tl || w > g.tl;
  if (!g.tiled) return g;
  g.rows = starts(h, g.overlap);
  g.cols = starts(w, g.overlap);
  for (int64_t i : g.rows) g.out_h += std::min(g.row_limit, g.f * std::min(g.tl, h - i));
  for (int64_t j : g.cols) g.out_w += std::min(g.row_limit, g.f * std::min(g.tl, w - j));
  return g;
}

// b[:, y, :] = a[:, ah - be + y, :] * (1 - y / be) + b[:, y, :] * (y / be) for y < be, where `a`
// holds the last `ah` rows of the tile above. Weights are computed in double and rounded to f32,
// then each product rounded, as PyTorch does for a tensor times a Python float.
void blend_v(const float* a, int64_t ah, float* b, int64_t C, int64_t bh, int64_t width, int64_t be) {
  for (int64_t y = 0; y < be; ++y) {
    const float wa = float(1.0 - double(y) / double(be)), wb = float(double(y) / double(be));
    for (int64_t c = 0; c < C; ++c) {
      const float* ar = a + (c * ah + ah - be + y) * width;
      float* br = b + (c * bh + y) * width;
      for (int64_t x = 0; x < width; ++x) {
        const float pa = ar[x] * wa, pb = br[x] * wb;
        br[x] = pa + pb;
      }
    }
  }
}

// b[:, :, x] = a[:, :, aw - be + x] * (1 - x / be) + b[:, :, x] * (x / be) for x < be, where `a`
// holds the last `aw` columns of the tile to the left (same height).
void blend_h(const float* a, int64_t aw, float* b, int64_t C, int64_t height, int64_t bw, int64_t be) {
  for (int64_t x = 0; x < be; ++x) {
    const float wa = float(1.0 - double(x) / double(be)), wb = float(double(x) / double(be));
    for (int64_t r = 0; r < C * height; ++r) {
      const float pa = a[r * aw + aw - be + x] * wa, pb = b[r * bw + x] * wb;
      b[r * bw + x] = pa + pb;
    }
  }
}

}  // namespace

Result<Shape> AutoencoderKL::tiled_output_shape(int64_t B, int64_t h, int64_t w, const VaeTiling& tiling) const {
  QUILL_ASSIGN_OR_RETURN(TileGrid g, make_grid(config_, h, w, tiling));
  if (!g.tiled) return Shape();
  return Shape({B, config_.out_channels, g.out_h, g.out_w});
}

Status AutoencoderKL::decode_tiled_one(const float* z, int64_t h, int64_t w, float* out, int64_t out_h, int64_t out_w,
                                       const VaeTiling& tiling, Dispatcher& ops) const {
  QUILL_ASSIGN_OR_RETURN(TileGrid g, make_grid(config_, h, w, tiling));
  const int64_t L = config_.latent_channels, C = config_.out_channels, f = g.f;
  const int64_t max_lh = std::min(g.tl, h), max_lw = std::min(g.tl, w);

  QUILL_ASSIGN_OR_RETURN(vae::Plan * plan, plans_->get({0, max_lh, max_lw}));
  std::lock_guard<std::mutex> lock(plan->mu);
  vae::Workspace& ws = plan->ws;
  std::vector<float> zt(static_cast<size_t>(L * max_lh * max_lw));
  std::vector<float> tile(static_cast<size_t>(C * f * max_lh * f * max_lw));

  struct Strip {  // the last rows (or columns) of a blended tile, and that tile's full extent
    std::vector<float> data;
    int64_t kept = 0, full = 0;
  };
  std::vector<Strip> above(g.cols.size()), below(g.cols.size());
  Strip left;

  int64_t oy = 0;
  for (size_t ri = 0; ri < g.rows.size(); ++ri) {
    const int64_t i = g.rows[ri], lh = std::min(g.tl, h - i), th = f * lh;
    int64_t ox = 0;
    for (size_t ci = 0; ci < g.cols.size(); ++ci) {
      const int64_t j = g.cols[ci], lw = std::min(g.tl, w - j), tw = f * lw;
      // z[:, i:i+lh, j:j+lw] -> contiguous, then post_quant_conv + decoder.
      for (int64_t c = 0; c < L; ++c)
        for (int64_t y = 0; y < lh; ++y)
          std::memcpy(zt.data() + (c * lh + y) * lw, z + (c * h + i + y) * w + j, size_t(lw) * sizeof(float));
      QUILL_RETURN_IF_ERROR(decode_one(zt.data(), lh, lw, tile.data(), ws, ops));

      if (ri > 0) {
        const Strip& a = above[ci];
        blend_v(a.data.data(), a.kept, tile.data(), C, th, tw, std::min({a.full, th, g.blend}));
      }
      if (ci > 0) blend_h(left.data.data(), left.kept, tile.data(), C, th, tw, std::min({left.full, tw, g.blend}));

      // Keep what the tiles below and to the right will read.
      Strip& bs = below[ci];
      bs.full = th;
      bs.kept = std::min(th, g.blend);
      bs.data.resize(size_t(C * bs.kept * tw));
      for (int64_t c = 0; c < C; ++c)
        std::memcpy(bs.data.data() + c * bs.kept * tw, tile.data() + (c * th + th - bs.kept) * tw,
                    size_t(bs.kept * tw) * sizeof(float));
      left.full = tw;
      left.kept = std::min(tw, g.blend);
      left.data.resize(size_t(C * th * left.kept));
      for (int64_t r = 0; r < C * th; ++r)
        std::memcpy(left.data.data() + r * left.kept, tile.data() + r * tw + tw - left.kept,
                    size_t(left.kept) * sizeof(float));

      // tile[:, :row_limit, :row_limit] -> out[:, oy:, ox:]
      const int64_t ch = std::min(g.row_limit, th), cw = std::min(g.row_limit, tw);
      for (int64_t c = 0; c < C; ++c)
        for (int64_t y = 0; y < ch; ++y)
          std::memcpy(out + (c * out_h + oy + y) * out_w + ox, tile.data() + (c * th + y) * tw,
                      size_t(cw) * sizeof(float));
      ox += cw;
    }
    std::swap(above, below);
    oy += std::min(g.row_limit, th);
  }
  return Status::ok();
}

}  // namespace quill
