#include "quill/status.h"
#include "quill/tensor.h"

#include <gtest/gtest.h>

namespace quill {
namespace {

Result<int> parse_positive(int v) {
  if (v <= 0) return invalid_argument("must be positive, got ", v);
  return v;
}

Result<int> twice(int v) {
  QUILL_ASSIGN_OR_RETURN(int x, parse_positive(v));
  return 2 * x;
}

TEST(Status, CarriesContext) {
  Status s = invalid_file("offsets overlap")
                 .with_file("m.safetensors")
                 .with_tensor("a.weight")
                 .with_expected_found("[0, 8)", "[4, 12)");
  EXPECT_EQ(s.to_string(), "file 'm.safetensors': tensor 'a.weight': offsets overlap (expected [0, 8), found [4, 12))");
  EXPECT_EQ(s.code(), ErrorCode::kInvalidFile);
}

TEST(Status, ResultPropagates) {
  EXPECT_EQ(twice(3).value(), 6);
  auto r = twice(-1);
  ASSERT_FALSE(r.is_ok());
  EXPECT_EQ(r.status().message(), "must be positive, got -1");
}

TEST(Tensor, ViewsShareMemory) {
  Tensor t = Tensor::empty(DType::kF32, {2, 3});
  float* p = t.data_as<float>();
  for (int i = 0; i < 6; ++i) p[i] = float(i);
  Tensor row = t.slice(0, 1, 2);
  EXPECT_EQ(row.shape(), Shape({1, 3}));
  EXPECT_EQ(row.to_f32_vector(), (std::vector<float>{3, 4, 5}));
  Tensor col = t.slice(1, 1, 2);
  EXPECT_FALSE(col.is_contiguous());
  EXPECT_EQ(col.to_f32_vector(), (std::vector<float>{1, 4}));
  EXPECT_EQ(t.reshape({3, 2}).dim(0), 3);
  auto st = expect_shape(t, "x", {2, 4});
  EXPECT_EQ(st.to_string(), "tensor 'x': shape mismatch (expected [2, 4], found [2, 3])");
}

}  // namespace
}  // namespace quill
