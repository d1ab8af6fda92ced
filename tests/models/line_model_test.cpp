// Line model parity against the PyTorch reference (tools/line_model.py, fixtures from
// tools/make_line_fixtures.py): two widths at batch 2, one engine, one plan per width.
#include <gtest/gtest.h>

#include "io/safetensors.h"
#include "runtime/line_engine.h"
#include "support/test_util.h"

namespace quill {
namespace {

TEST(LineModel, MatchesPyTorchReferenceAtTwoWidths) {
  ThreadPool pool(2);
  auto engine = open_line_engine(test::fixture("line/model"), pool);
  ASSERT_TRUE(engine.is_ok()) << engine.status().to_string();
  for (const char* name : {"w48", "w80", "w48"}) {
    const std::string dir = test::fixture(std::string("line/") + name);
    auto in = SafetensorsFile::open(dir + "/inputs.safetensors");
    auto ex = SafetensorsFile::open(dir + "/expected.safetensors");
    ASSERT_TRUE(in.is_ok() && ex.is_ok());
    const Tensor x = (*in)->tensor("hidden_states").value();
    const auto xv = x.to_f32_vector(), gv = (*in)->tensor("glyphs").value().to_f32_vector();
    const auto sv = (*in)->tensor("style").value().to_f32_vector(),
               tv = (*in)->tensor("timestep").value().to_f32_vector();
    const auto expected = (*ex)->tensor("sample").value().to_f32_vector();
    std::vector<float> out(expected.size(), NAN);
    const LineBucket bucket{x.dim(0), x.dim(3)};
    Status st = (*engine)->forward(bucket, xv.data(), gv.data(), sv.data(), tv.data(), out.data());
    ASSERT_TRUE(st.is_ok()) << st.to_string();
    const double rel = test::rel_l2(out, expected);
    EXPECT_LE(rel, 1e-4) << name << " rel " << rel;
  }
  // Two widths -> two plans; the third forward reused the first.
  EXPECT_EQ((*engine)->plan_stats().builds, 2u);
  EXPECT_EQ((*engine)->plan_stats().hits, 1u);
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
