#include "pipeline/line_sampler.h"

#include <algorithm>
#include <cmath>

#include "core/rng.h"

namespace quill {

void line_sigma_schedule(int steps, float shift, std::vector<float>* sigmas, std::vector<float>* timesteps,
                         float start) {
  sigmas->clear();
  timesteps->clear();
  for (int i = 0; i <= steps; ++i) {
    const float s = start * (1.0f - float(i) / float(steps));
    const float shifted = shift * s / (1.0f + (shift - 1.0f) * s);
    sigmas->push_back(shifted);
    if (i < steps) timesteps->push_back(shifted * 1000.0f);
  }
  sigmas->back() = 0.0f;
}

void glyphs_to_model_input(const uint8_t* gray, int64_t H, int64_t W, int64_t d, float* out) {
  const int64_t h = H / d, w = W / d;
  for (int64_t y = 0; y < h; ++y)
    for (int64_t x = 0; x < w; ++x) {
      float acc = 0;
      for (int64_t dy = 0; dy < d; ++dy)
        for (int64_t dx = 0; dx < d; ++dx) acc += float(gray[(y * d + dy) * W + x * d + dx]);
      out[y * w + x] = 1.0f - 2.0f * (acc / float(d * d)) / 255.0f;
    }
}

void line_output_to_gray(const float* x, int64_t n, uint8_t* gray) {
  for (int64_t i = 0; i < n; ++i) {
    const float v = std::clamp((x[i] + 1.0f) * 0.5f, 0.0f, 1.0f);
    gray[i] = uint8_t(std::lround(v * 255.0f));
  }
}

Status line_sample(LineEngine& engine, const LineSampleRequest& r, std::vector<float>* out,
                   const StepControl& control) {
  const LineModelConfig& cfg = engine.model().config();
  const int64_t B = r.batch, Hl = cfg.latent_height(), W = r.latent_w;
  if (r.steps <= 0 || r.steps > 1000) return invalid_argument("steps must be in [1, 1000], got ", r.steps);
  if (!(r.shift > 0.0f)) return invalid_argument("shift must be positive, got ", r.shift);
  if (!(r.start_sigma > 0.0f && r.start_sigma <= 1.0f))
    return invalid_argument("start sigma must be in (0, 1], got ", r.start_sigma);
  if (r.start_sigma < 1.0f && cfg.in_channels != cfg.glyph_channels)
    return unsupported("starting from the glyph line needs in_channels == glyph_channels (model has ", cfg.in_channels,
                       " and ", cfg.glyph_channels, ")");
  if (!r.glyphs) return invalid_argument("glyph line is required");
  const bool guided = r.guidance_scale > 1.0f;
  const int64_t MB = guided ? 2 * B : B;
  const int64_t per_glyph = cfg.glyph_channels * Hl * W, S = cfg.style_dim;

  // Batched conditioning: [uncond; cond] when guided. Unconditional style = zeros; unconditional
  // text = the same glyph line, or with guide_glyph a blank one.
  std::vector<float> glyphs(static_cast<size_t>(MB * per_glyph), -1.0f), style(static_cast<size_t>(MB * S), 0.0f);
  for (int64_t m = guided && r.guide_glyph ? B : 0; m < MB; ++m)
    std::copy(r.glyphs + (m % B) * per_glyph, r.glyphs + (m % B + 1) * per_glyph, glyphs.begin() + m * per_glyph);
  if (r.style) std::copy(r.style, r.style + B * S, style.begin() + (guided ? B * S : 0));
  std::vector<float> tsteps(static_cast<size_t>(MB));

  FlowLoop loop;
  loop.batch = B;
  loop.per_sample = cfg.in_channels * Hl * W;
  loop.guidance_scale = r.guidance_scale;
  line_sigma_schedule(r.steps, r.shift, &loop.sigmas, &loop.timesteps, r.start_sigma);
  out->assign(static_cast<size_t>(B * loop.per_sample), 0.0f);
  std::vector<int32_t> row_tokens;
  if (r.row_latent_w) {
    if (!r.row_seeds) return invalid_argument("a ragged batch needs a seed per row");
    std::vector<float> noise;
    for (int64_t b = 0; b < B; ++b) {
      const int64_t wb = r.row_latent_w[b];
      if (wb <= 0 || wb > W || wb % cfg.patch_size)
        return invalid_argument("row ", b, " width ", wb, " must be a positive multiple of ", cfg.patch_size,
                                " up to ", W);
      noise.resize(static_cast<size_t>(cfg.in_channels * Hl * wb));
      fill_normal(r.row_seeds[b], noise.data(), int64_t(noise.size()));
      for (int64_t cy = 0; cy < cfg.in_channels * Hl; ++cy)
        std::copy(noise.begin() + cy * wb, noise.begin() + (cy + 1) * wb, out->begin() + b * loop.per_sample + cy * W);
    }
    row_tokens.resize(static_cast<size_t>(MB));
    for (int64_t m = 0; m < MB; ++m) row_tokens[size_t(m)] = int32_t(r.row_latent_w[m % B] / cfg.patch_size);
  } else if (r.row_seeds) {
    for (int64_t b = 0; b < B; ++b) fill_normal(r.row_seeds[b], out->data() + b * loop.per_sample, loop.per_sample);
  } else {
    fill_normal(r.seed, out->data(), int64_t(out->size()));
  }
  if (r.start_sigma < 1.0f) {
    const float s = loop.sigmas.front();
    for (int64_t i = 0; i < B * loop.per_sample; ++i)
      (*out)[size_t(i)] = s * (*out)[size_t(i)] - (1.0f - s) * r.glyphs[i];
  }
  const LineBucket bucket{MB, W}, plan{std::max(MB, r.plan_rows), W};
  return run_flow_loop(
      loop, *out,
      [&](const float* x, int64_t, float t, float* v) -> Status {
        std::fill(tsteps.begin(), tsteps.end(), t);
        const int32_t* tokens = row_tokens.empty() ? nullptr : row_tokens.data();
        return engine.forward_in(plan, bucket, x, glyphs.data(), style.data(), tsteps.data(), v, tokens);
      },
      control);
}

}  // namespace quill
