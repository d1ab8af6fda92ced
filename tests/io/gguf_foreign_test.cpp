// 1- and 2-bit GGUF types from other writers (docs/FORMATS.md): each read to exactly the values
// its published layout defines, or refused with a clear error; never misread. Blocks are built
// here byte by byte from the layouts (ggml-common.h / ggml-quants.c for Q1_0 and Q2_0, PrismML's
// fork for PQ2_0).
#include <gtest/gtest.h>

#include <cstring>

#include "io/gguf.h"
#include "io/io_test_util.h"
#include "quant/formats.h"

namespace quill {
namespace {

using testing::expect_error;
using testing::Raw;

constexpr uint16_t kHalf = 0x3800, kQuarter = 0x3400;  // f16 0.5, 0.25

Result<std::shared_ptr<GgufFile>> parse(const std::string& bytes) {
  return GgufFile::parse(FileBytes::copy_of(bytes.data(), bytes.size(), "mem.gguf"));
}

// One tensor "w" [rows, K] of ggml `type` whose data section holds `data` (then zero padding to
// `room` bytes), with `quill_meta` adding the metadata Quill's writer leaves.
std::string file_with(uint32_t type, uint64_t K, uint64_t rows, const std::string& data, size_t room,
                      bool quill_meta = false) {
  Raw r;
  r.bytes("GGUF").u32(3).u64(1).u64(quill_meta ? 1 : 0);
  if (quill_meta) r.str("quill.quantize.type").u32(8).str("tq2_0_g128");  // 8: string
  r.str("w").u32(2).u64(K).u64(rows).u32(type).u64(0);
  r.pad_to(32).bytes(data).zeros(room - data.size());
  return r.data();
}

std::string half_bytes(uint16_t h) { return std::string(reinterpret_cast<const char*>(&h), 2); }

std::vector<float> values(const GgufFile& f) {
  auto t = f.tensor("w");
  EXPECT_TRUE(t.is_ok()) << t.status().to_string();
  if (!t) return {};
  return quant::dequantize_tensor(*t).value().to_f32_vector();
}

// 2-bit codes, 4 to a byte, least-significant first.
std::string pack2(const std::vector<unsigned>& codes) {
  std::string s(codes.size() / 4, '\0');
  for (size_t j = 0; j < codes.size(); ++j) s[j / 4] = char(uint8_t(s[j / 4]) | (codes[j] << (2 * (j % 4))));
  return s;
}

TEST(GgufForeign, GgmlQ1_0ReadsAsTernaryPlusMinusD) {
  std::string bits(16, '\0');
  for (int j = 0; j < 128; ++j)
    if (j % 3 == 0) bits[size_t(j / 8)] = char(uint8_t(bits[size_t(j / 8)]) | (1u << (j % 8)));
  auto f = parse(file_with(41, 128, 1, half_bytes(kHalf) + bits, 32));
  ASSERT_TRUE(f.is_ok()) << f.status().to_string();
  EXPECT_EQ((*f)->tensors()[0].dtype, DType::kTQ2_0_G128);
  const auto v = values(**f);
  ASSERT_EQ(v.size(), 128u);
  for (int j = 0; j < 128; ++j) EXPECT_EQ(v[size_t(j)], j % 3 == 0 ? 0.5f : -0.5f) << j;
}

TEST(GgufForeign, PrismPQ2_0IsTernaryWhenItCanBeAndQ8OtherwiseWithTheSameValues) {
  std::vector<unsigned> codes(128);
  for (int j = 0; j < 128; ++j) codes[size_t(j)] = unsigned(j % 3);
  auto f = parse(file_with(142, 128, 1, half_bytes(kQuarter) + pack2(codes), 64));
  ASSERT_TRUE(f.is_ok()) << f.status().to_string();
  EXPECT_EQ((*f)->tensors()[0].dtype, DType::kTQ2_0_G128);
  auto v = values(**f);
  for (int j = 0; j < 128; ++j) EXPECT_EQ(v[size_t(j)], 0.25f * float(int(codes[size_t(j)]) - 1)) << j;

  codes[7] = 3;  // a +2d weight: tq2_0_g128 cannot hold it
  f = parse(file_with(142, 128, 1, half_bytes(kQuarter) + pack2(codes), 64));
  ASSERT_TRUE(f.is_ok()) << f.status().to_string();
  EXPECT_EQ((*f)->tensors()[0].dtype, DType::kQ8_0);
  v = values(**f);
  for (int j = 0; j < 128; ++j) EXPECT_EQ(v[size_t(j)], 0.25f * float(int(codes[size_t(j)]) - 1)) << j;
}

TEST(GgufForeign, UpstreamQ2_0WithRowsOf64ReadsAsQ8) {
  std::vector<unsigned> codes(64);
  for (int j = 0; j < 64; ++j) codes[size_t(j)] = unsigned(j % 4);
  auto f = parse(file_with(42, 64, 1, half_bytes(kHalf) + pack2(codes), 32));
  ASSERT_TRUE(f.is_ok()) << f.status().to_string();
  EXPECT_EQ((*f)->tensors()[0].dtype, DType::kQ8_0);
  const auto v = values(**f);
  for (int j = 0; j < 64; ++j) EXPECT_EQ(v[size_t(j)], 0.5f * float(int(codes[size_t(j)]) - 1)) << j;
}

TEST(GgufForeign, Id42IsSettledByTheRoomEachTensorHas) {
  // 32 rows of 128: Quill's layout needs 1088 bytes, upstream Q2_0 1152.
  std::string ours;
  for (int b = 0; b < 32; ++b) {
    std::vector<unsigned> codes(128, 2u);  // +1
    ours += pack2(codes) + half_bytes(kHalf);
  }
  auto f = parse(file_with(42, 128, 32, ours, 1088));
  ASSERT_TRUE(f.is_ok()) << f.status().to_string();
  EXPECT_EQ((*f)->tensors()[0].dtype, DType::kTQ2_0_G128);
  for (float x : values(**f)) ASSERT_EQ(x, 0.5f);

  std::string q2;
  for (int b = 0; b < 64; ++b) q2 += half_bytes(kQuarter) + pack2(std::vector<unsigned>(64, 3u));  // +2d each
  f = parse(file_with(42, 128, 32, q2, 1152));
  ASSERT_TRUE(f.is_ok()) << f.status().to_string();
  EXPECT_EQ((*f)->tensors()[0].dtype, DType::kQ8_0);
  for (float x : values(**f)) ASSERT_EQ(x, 0.5f);

  // Quill's own files say what they hold, whatever the room.
  f = parse(file_with(42, 128, 32, ours, 1152, /*quill_meta=*/true));
  ASSERT_TRUE(f.is_ok()) << f.status().to_string();
  EXPECT_EQ((*f)->tensors()[0].dtype, DType::kTQ2_0_G128);

  // One row: 34 against 36 bytes, within the alignment padding: refused rather than guessed.
  expect_error(parse(file_with(42, 128, 1, ours.substr(0, 34), 64)).status(),
               {"tensor 'w'", "too small to tell them apart"});
}

TEST(GgufForeign, PrismPTQ1_0IsRefusedByName) {
  expect_error(parse(file_with(143, 128, 1, std::string(28, '\0'), 32)).status(),
               {"tensor 'w'", "ggml type 143 (PrismML PTQ1_0)", "no published specification"});
}

}  // namespace
}  // namespace quill
