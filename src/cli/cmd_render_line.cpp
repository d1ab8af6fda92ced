// `quill render-line`: the glyph line Quill conditions the line model on, as a PNG, with its
// natural width and bucket. Training data uses this same renderer (pixel-identical glyphs).
#include <cstdio>

#include <nlohmann/json.hpp>

#include "cli/command.h"
#include "io/image.h"
#include "text/glyph_line.h"

namespace quill::cli {
namespace {

struct Options {
  std::string text, font, output, overflow = "error";
  int64_t line_height = 64, max_width = 1024, downscale = 8, patch = 2;
  bool json = false;
};

int run(const Options& o) {
  auto r = GlyphLineRenderer::create(o.font);
  if (!r) return report_error(r.status());
  const OverflowPolicy policy = o.overflow == "clamp" ? OverflowPolicy::kClamp : OverflowPolicy::kError;
  auto g = (*r)->render(o.text, o.line_height, o.max_width, o.downscale, o.patch, policy);
  if (!g) return report_error(g.status());
  if (!o.output.empty()) {
    Image img;
    img.width = int(g->width);
    img.height = int(g->height);
    img.channels = 1;
    img.pixels = g->gray;
    Status st = write_png(o.output, img);
    if (!st) return report_error(st);
  }
  const WidthBucket& b = g->bucket;
  if (!g->missing.empty()) {
    std::string list;
    for (uint32_t cp : g->missing) list += (list.empty() ? "" : ", ") + describe_code_point(cp);
    std::fprintf(stderr, "quill: warning: the font has no glyph for %s (drawn as the font's .notdef box)\n",
                 list.c_str());
  }
  if (o.json) {
    nlohmann::json j = {{"natural_width", b.natural_width},
                        {"canvas_width", b.canvas_width},
                        {"height", g->height},
                        {"latent_width", b.latent_width},
                        {"tokens", b.tokens},
                        {"clamped", b.clamped},
                        {"glyphs", g->glyph_count},
                        {"font", (*r)->font_path()}};
    nlohmann::json missing = nlohmann::json::array();
    for (uint32_t cp : g->missing) missing.push_back(describe_code_point(cp));
    j["missing"] = missing;
    std::printf("%s\n", j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace).c_str());
  } else {
    std::printf("natural width %lld px, canvas %lldx%lld px%s, latent width %lld, %lld tokens per row; font %s\n",
                (long long)b.natural_width, (long long)b.canvas_width, (long long)g->height,
                b.clamped ? " (clipped)" : "", (long long)b.latent_width, (long long)b.tokens,
                (*r)->font_path().c_str());
  }
  return kExitOk;
}

Runner setup(CLI::App& sub) {
  auto o = std::make_shared<Options>();
  sub.add_option("--text", o->text, "the line of text (UTF-8)")->required();
  sub.add_option("--font", o->font, "TTF/OTF font (default: DejaVu Sans from fonts-dejavu-core)");
  sub.add_option("--line-height", o->line_height, "canvas height in pixels")->check(CLI::Range(8, 1024));
  sub.add_option("--max-width", o->max_width, "widest canvas in pixels (multiple of 16)")->check(CLI::Range(16, 65536));
  sub.add_option("--overflow", o->overflow, "too-long lines: error, or clamp (clip to --max-width)")
      ->check(CLI::IsMember({"error", "clamp"}));
  sub.add_option("--downscale", o->downscale, "canvas pixels per latent pixel, for the bucket report")
      ->check(CLI::Range(1, 64));
  sub.add_option("--patch", o->patch, "latent pixels per token, for the bucket report")->check(CLI::Range(1, 64));
  sub.add_option("-o,--output", o->output, "PNG to write (gray, 255 = paper)");
  sub.add_flag("--json", o->json, "print the measurements as JSON");
  return [o] { return run(*o); };
}

}  // namespace
QUILL_COMMAND(render_line, "render-line", "Render a line of text as the glyph line the line model is conditioned on",
              setup);
}  // namespace quill::cli
