// `quill render-line`: the glyph line Quill conditions the line model on, as a PNG, with its
// natural width and bucket. Training data uses this same renderer (pixel-identical glyphs): the
// trainer renders its texts in one call with --batch-file.
#include <cstdio>
#include <fstream>

#include <nlohmann/json.hpp>

#include "cli/command.h"
#include "core/input_files.h"
#include "io/image.h"
#include "text/glyph_line.h"

namespace quill::cli {
namespace {

struct Options {
  std::string text, font, output, batch_file, output_dir, overflow = "error";
  int64_t line_height = 64, max_width = 1024, downscale = 8, patch = 2;
  bool json = false;
  bool text_given = false;
};

nlohmann::json measurements(const GlyphLine& g, const std::string& font) {
  const WidthBucket& b = g.bucket;
  nlohmann::json j = {{"natural_width", b.natural_width},
                      {"canvas_width", b.canvas_width},
                      {"height", g.height},
                      {"latent_width", b.latent_width},
                      {"tokens", b.tokens},
                      {"clamped", b.clamped},
                      {"glyphs", g.glyph_count},
                      {"font", font}};
  nlohmann::json missing = nlohmann::json::array();
  for (uint32_t cp : g.missing) missing.push_back(describe_code_point(cp));
  j["missing"] = missing;
  return j;
}

Status write_gray_png(const std::string& path, const GlyphLine& g) {
  Image img;
  img.width = int(g.width);
  img.height = int(g.height);
  img.channels = 1;
  img.pixels = g.gray;
  return write_png(path, img);
}

void warn_missing(const GlyphLine& g) {
  if (g.missing.empty()) return;
  std::string list;
  for (uint32_t cp : g.missing) list += (list.empty() ? "" : ", ") + describe_code_point(cp);
  std::fprintf(stderr, "quill: warning: the font has no glyph for %s (drawn as the font's .notdef box)\n",
               list.c_str());
}

// One PNG per line of the batch file (<dir>/NNNNNN.png, 0-based line index) and one JSON object
// per line on stdout with "index", "text", "png" and the measurements. A line that cannot be
// rendered (too wide under --overflow error, bad UTF-8) gets an "error" instead of a PNG; the
// exit code is 1 if any line failed.
int run_batch(const Options& o, GlyphLineRenderer& r, OverflowPolicy policy) {
  std::ifstream f(o.batch_file);
  note_input_file(o.batch_file);
  if (!f) return report_error(not_found("cannot read the batch file").with_file(o.batch_file));
  std::string line;
  int index = 0, failed = 0;
  while (std::getline(f, line)) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    char name[32];
    std::snprintf(name, sizeof name, "%06d.png", index);
    const std::string png = o.output_dir + "/" + name;
    nlohmann::json j;
    auto g = r.render(line, o.line_height, o.max_width, o.downscale, o.patch, policy);
    if (!g) {
      j = {{"error", g.status().to_string()}};
      ++failed;
    } else if (Status st = write_gray_png(png, *g); !st) {
      return report_error(st);
    } else {
      j = measurements(*g, r.font_path());
      j["png"] = png;
    }
    j["index"] = index++;
    j["text"] = line;
    std::printf("%s\n", j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace).c_str());
  }
  if (index == 0) return report_error(invalid_argument("the batch file has no lines").with_file(o.batch_file));
  return failed ? kExitRuntimeError : kExitOk;
}

int run(const Options& o) {
  auto r = GlyphLineRenderer::create(o.font);
  if (!r) return report_error(r.status());
  const OverflowPolicy policy = o.overflow == "clamp" ? OverflowPolicy::kClamp : OverflowPolicy::kError;
  if (o.text_given == !o.batch_file.empty())
    return report_error(invalid_argument("give exactly one of --text or --batch-file"));
  if (!o.batch_file.empty()) {
    if (o.output_dir.empty()) return report_error(invalid_argument("--batch-file needs --output-dir"));
    return run_batch(o, **r, policy);
  }
  auto g = (*r)->render(o.text, o.line_height, o.max_width, o.downscale, o.patch, policy);
  if (!g) return report_error(g.status());
  if (!o.output.empty()) {
    if (Status st = write_gray_png(o.output, *g); !st) return report_error(st);
  }
  warn_missing(*g);
  const WidthBucket& b = g->bucket;
  if (o.json) {
    std::printf(
        "%s\n",
        measurements(*g, (*r)->font_path()).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace).c_str());
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
  CLI::Option* text = sub.add_option("--text", o->text, "the line of text (UTF-8)");
  sub.add_option("--batch-file", o->batch_file,
                 "render every line of this file (UTF-8) to --output-dir/NNNNNN.png; prints one JSON object per line");
  sub.add_option("--output-dir", o->output_dir, "folder for --batch-file PNGs (must exist)");
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
  return [o, text] {
    o->text_given = text->count() > 0;
    return run(*o);
  };
}

}  // namespace
QUILL_COMMAND(render_line, "render-line", "Render a line of text as the glyph line the line model is conditioned on",
              setup);
}  // namespace quill::cli
