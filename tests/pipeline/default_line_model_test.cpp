// The shipped line model (models/quill-line, trained by tools/train_line_model.py) writes a line
// that is handwriting, not noise: ink where the glyph line has ink (column profiles correlate),
// paper elsewhere, and close to the reference PNG this same pipeline wrote when the model was
// committed. A random-weight model fails the correlation check (see RandomModelFailsTheCheck).
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>

#include "io/image.h"
#include "pipeline/line_pipeline.h"
#include "pipeline/style_encoder_dinov2.h"
#include "support/test_util.h"

namespace quill {
namespace {

const std::string kModel = std::string(QUILL_SOURCE_DIR) + "/models/quill-line";
const char* kKongl =
    "Kongl. Maj:ts n\xc3\xa5"
    "diga f\xc3\xb6rordning";

// Ink per column (0..1, 1 = fully inked), smoothed over `win` columns.
std::vector<double> ink_profile(const std::vector<uint8_t>& gray, int64_t H, int64_t W, int win) {
  std::vector<double> col(size_t(W), 0.0), out(size_t(W), 0.0);
  for (int64_t x = 0; x < W; ++x)
    for (int64_t y = 0; y < H; ++y) col[size_t(x)] += (255.0 - gray[size_t(y * W + x)]) / 255.0 / double(H);
  for (int64_t x = 0; x < W; ++x) {
    double s = 0;
    int n = 0;
    for (int64_t d = -win; d <= win; ++d)
      if (x + d >= 0 && x + d < W) s += col[size_t(x + d)], ++n;
    out[size_t(x)] = s / n;
  }
  return out;
}

double pearson(const std::vector<double>& a, const std::vector<double>& b) {
  double ma = 0, mb = 0;
  for (size_t i = 0; i < a.size(); ++i) ma += a[i], mb += b[i];
  ma /= double(a.size());
  mb /= double(b.size());
  double ab = 0, aa = 0, bb = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    ab += (a[i] - ma) * (b[i] - mb);
    aa += (a[i] - ma) * (a[i] - ma);
    bb += (b[i] - mb) * (b[i] - mb);
  }
  return ab / std::sqrt(aa * bb + 1e-300);
}

struct Written {
  LineImage line;
  std::vector<uint8_t> glyphs;
};

Written write_line(const std::string& model_dir, ThreadPool& pool) {
  auto p = LinePipeline::open(model_dir, "", pool);
  EXPECT_TRUE(p.is_ok()) << p.status().to_string();
  if (!p.is_ok()) return {};
  auto enc = Dinov2StyleEncoder::open_if_present(model_dir, pool);
  EXPECT_TRUE(enc.is_ok()) << enc.status().to_string();
  if (enc.is_ok() && *enc) (*p)->set_style_encoder(std::move(enc.value()));
  auto opts = line_options_for_model(model_dir);  // `quill line`'s defaults (sampler.json), seed 0
  EXPECT_TRUE(opts.is_ok()) << opts.status().to_string();
  if (!opts.is_ok()) return {};
  const LineOptions o = *opts;
  const std::string style = std::ifstream(model_dir + "/style_reference.png") ? model_dir + "/style_reference.png" : "";
  auto lines = (*p)->generate({kKongl}, style, o);
  EXPECT_TRUE(lines.is_ok()) << lines.status().to_string();
  if (!lines.is_ok()) return {};
  const auto& c = (*p)->engine().model().config();
  auto g = (*p)->renderer().render(kKongl, c.line_height, c.max_line_width, c.downscale, c.patch_size,
                                   OverflowPolicy::kError);
  EXPECT_TRUE(g.is_ok());
  return {(*lines)[0], g.is_ok() ? g->gray : std::vector<uint8_t>{}};
}

TEST(DefaultLineModel, WritesHandwritingNotNoise) {
  ASSERT_TRUE(std::ifstream(kModel + "/config.json")) << "the shipped model is missing: " << kModel;
  ThreadPool pool(2);
  const Written w = write_line(kModel, pool);
  const LineImage& li = w.line;
  ASSERT_EQ(li.gray.size(), size_t(li.width * li.height));
  ASSERT_EQ(w.glyphs.size(), li.gray.size());
  size_t paper = 0, ink = 0;
  for (uint8_t v : li.gray) paper += v > 200, ink += v < 100;
  const double paper_frac = double(paper) / double(li.gray.size()), ink_frac = double(ink) / double(li.gray.size());
  const double r = pearson(ink_profile(li.gray, li.height, li.width, 4), ink_profile(w.glyphs, li.height, li.width, 4));
  std::printf("[ default ] %lldx%lld paper %.3f ink %.3f column-ink correlation with the glyph line %.3f\n",
              (long long)li.width, (long long)li.height, paper_frac, ink_frac, r);
  RecordProperty("ink_correlation", std::to_string(r));
  EXPECT_GT(paper_frac, 0.55);
  EXPECT_LT(paper_frac, 0.99);
  EXPECT_GT(ink_frac, 0.01);
  EXPECT_LT(ink_frac, 0.35);
  EXPECT_GT(r, 0.6) << "ink does not follow the text";

  // Against the reference written by this pipeline when the model was committed.
  auto ref = read_image(test::fixture("line/default_kongl.png"));
  ASSERT_TRUE(ref.is_ok()) << ref.status().to_string();
  ASSERT_EQ(ref->width, li.width);
  ASSERT_EQ(ref->height, li.height);
  double mad = 0;
  for (size_t i = 0; i < li.gray.size(); ++i) mad += std::abs(double(li.gray[i]) - double(ref->pixels[i]));
  mad /= double(li.gray.size());
  std::printf("[ default ] mean |difference| vs the committed reference: %.3f gray levels\n", mad);
  EXPECT_LE(mad, 3.0);
}

// The correlation check can fail: the random-weight test model writes noise that does not follow
// the glyph line.
TEST(DefaultLineModel, RandomModelFailsTheCheck) {
  ThreadPool pool(2);
  const Written w = write_line(test::fixture("line/model"), pool);
  ASSERT_FALSE(w.line.gray.empty());
  const double r = pearson(ink_profile(w.line.gray, w.line.height, w.line.width, 4),
                           ink_profile(w.glyphs, w.line.height, w.line.width, 4));
  EXPECT_LT(r, 0.6);
}

}  // namespace
}  // namespace quill
