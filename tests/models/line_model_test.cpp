// Line model parity against the PyTorch reference (tools/line_model.py, fixtures from
// tools/make_line_fixtures.py): two widths at batch 2, one engine, one plan per width.
#include <gtest/gtest.h>

#include "io/safetensors.h"
#include "runtime/line_engine.h"
#include "support/test_util.h"

namespace quill {
namespace {

// One forward of fixture case `name` (inputs/expected from tools/make_line_fixtures.py): rel L2.
double case_rel_error(LineEngine& engine, const std::string& name) {
  const std::string dir = test::fixture("line/" + name);
  auto in = SafetensorsFile::open(dir + "/inputs.safetensors");
  auto ex = SafetensorsFile::open(dir + "/expected.safetensors");
  EXPECT_TRUE(in.is_ok() && ex.is_ok()) << dir;
  if (!in.is_ok() || !ex.is_ok()) return INFINITY;
  const Tensor x = (*in)->tensor("hidden_states").value();
  const auto xv = x.to_f32_vector(), gv = (*in)->tensor("glyphs").value().to_f32_vector();
  const auto sv = (*in)->tensor("style").value().to_f32_vector(),
             tv = (*in)->tensor("timestep").value().to_f32_vector();
  const auto expected = (*ex)->tensor("sample").value().to_f32_vector();
  std::vector<float> out(expected.size(), NAN);
  Status st = engine.forward(LineBucket{x.dim(0), x.dim(3)}, xv.data(), gv.data(), sv.data(), tv.data(), out.data());
  EXPECT_TRUE(st.is_ok()) << st.to_string();
  return test::rel_l2(out, expected);
}

TEST(LineModel, MatchesPyTorchReferenceAtTwoWidths) {
  ThreadPool pool(2);
  auto engine = open_line_engine(test::fixture("line/model"), pool);
  ASSERT_TRUE(engine.is_ok()) << engine.status().to_string();
  for (const char* name : {"w48", "w80", "w48"}) EXPECT_LE(case_rel_error(**engine, name), 1e-4) << name;
  // Two widths -> two plans; the third forward reused the first.
  EXPECT_EQ((*engine)->plan_stats().builds, 2u);
  EXPECT_EQ((*engine)->plan_stats().hits, 1u);
}

// glyph_concat: the glyph line also enters x_embedder as extra channels (the trained model's mode).
TEST(LineModel, GlyphConcatMatchesPyTorchReference) {
  ThreadPool pool(2);
  auto engine = open_line_engine(test::fixture("line/model_concat"), pool);
  ASSERT_TRUE(engine.is_ok()) << engine.status().to_string();
  EXPECT_TRUE((*engine)->model().config().glyph_concat);
  EXPECT_LE(case_rel_error(**engine, "concat_w64"), 1e-4);
}

TEST(LineModelConfig, RejectsGeometryThatCannotTileTheCanvas) {
  const nlohmann::json base = {{"line_height", 32}, {"max_line_width", 1024}, {"patch_size", 8}, {"downscale", 1}};
  EXPECT_TRUE(LineModelConfig::from_json(base, "c.json").is_ok());
  struct Bad {
    nlohmann::json patch;
    const char* phrase;
  };
  const Bad bad[] = {
      {{{"patch_size", 3}, {"line_height", 30}}, "must divide 16"},
      {{{"patch_size", 8}, {"downscale", 4}}, "must divide 16"},
      {{{"max_line_width", 1000}}, "multiple of 16"},
      {{{"glyph_concat", 1}}, "glyph_concat' must be true or false"},
  };
  for (const Bad& b : bad) {
    nlohmann::json j = base;
    j.update(b.patch);
    auto r = LineModelConfig::from_json(j, "c.json");
    ASSERT_FALSE(r.is_ok()) << j.dump();
    EXPECT_NE(r.status().to_string().find(b.phrase), std::string::npos) << r.status().to_string();
    EXPECT_NE(r.status().to_string().find("c.json"), std::string::npos);
  }
}

TEST(LineModel, RejectsWidthsOffTheGrid) {
  ThreadPool pool(1);
  auto engine = open_line_engine(test::fixture("line/model"), pool);
  ASSERT_TRUE(engine.is_ok());
  auto r = (*engine)->plan({1, 50});
  ASSERT_FALSE(r.is_ok());
  EXPECT_NE(r.status().message().find("multiple of patch_size 4"), std::string::npos) << r.status().to_string();
  auto wide = (*engine)->plan({1, 4096});
  ASSERT_FALSE(wide.is_ok());
  EXPECT_NE(wide.status().message().find("max_line_width"), std::string::npos);
}

}  // namespace
}  // namespace quill
