// libFuzzer target: the three JSON files of a line model folder, as LineStudio reads them —
// config.json (LineModelConfig), sampler.json (sampling defaults) and style_encoder/config.json
// (Dinov2Config). The input is the three texts separated by NUL bytes (absent parts are skipped).
// Whatever a parser accepts must describe a model whose derived sizes are positive and whose
// every width bucket splits into whole tokens; sampling defaults must be in their ranges.
#include <cmath>
#include <cstdint>
#include <string_view>

#include "fuzz_util.h"
#include "io/json_util.h"
#include "models/dinov2.h"
#include "models/line_model.h"
#include "pipeline/line_pipeline.h"
#include "quill/line_studio.h"
#include "text/width_bucket.h"

using namespace quill;

namespace {

void check_line_config(std::string_view text) {
  auto j = parse_json_checked(text, "config.json");
  if (!j) return;
  auto c = LineModelConfig::from_json(*j, "config.json");
  if (!c) {
    (void)c.status().to_string();
    return;
  }
  if (c->inner_dim() <= 0 || c->latent_height() <= 0 || c->x_embed_channels() <= 0)
    fuzz::fail("accepted line config has a non-positive size");
  if (!(c->rope_theta > 0) || !std::isfinite(c->rope_theta)) fuzz::fail("accepted rope_theta is not finite > 0");
  // Every width the renderer can ask for, from the narrowest canvas to the widest, in steps of 16.
  for (int64_t w = 1; w <= c->max_line_width; w += std::max<int64_t>(16, c->max_line_width / 64)) {
    auto b = width_bucket(w, c->line_height, c->max_line_width, c->downscale, c->patch_size, OverflowPolicy::kError);
    if (!b) continue;  // line height above the max width: refused, not mis-sized
    if (b->canvas_width % 16 || b->latent_width * c->downscale != b->canvas_width ||
        b->tokens * c->patch_size != b->latent_width || b->tokens <= 0)
      fuzz::fail("a width bucket does not split into whole tokens");
  }
}

void check_sampler(std::string_view text) {
  auto o = line_options_from_json(text, "sampler.json");
  if (!o) {
    (void)o.status().to_string();
    return;
  }
  auto in = [](double v, SettingRange r) { return v >= r.lo && v <= r.hi; };
  if (!in(o->steps, kLineStepsRange) || !in(o->guidance_scale, kLineGuidanceRange) || !in(o->shift, kLineShiftRange) ||
      !in(o->start_sigma, kLineStartSigmaRange))
    fuzz::fail("accepted sampler.json holds an out-of-range default");
}

void check_style_encoder_config(std::string_view text) {
  auto j = parse_json_checked(text, "style_encoder/config.json");
  if (!j || !j->is_object()) return;
  auto c = Dinov2Config::from_json(*j, "style_encoder/config.json");
  if (!c) {
    (void)c.status().to_string();
    return;
  }
  if (c->inner_dim() <= 0 || c->mlp_hidden() <= 0 || c->grid_h() <= 0 || c->grid_w() <= 0 || c->head_dim <= 0)
    fuzz::fail("accepted Dinov2 config has a non-positive derived size");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view rest(reinterpret_cast<const char*>(data), size);
  void (*const parts[])(std::string_view) = {check_line_config, check_sampler, check_style_encoder_config};
  for (auto* check : parts) {
    const size_t cut = rest.find('\0');
    check(rest.substr(0, cut));
    if (cut == std::string_view::npos) break;
    rest.remove_prefix(cut + 1);
  }
  return 0;
}
