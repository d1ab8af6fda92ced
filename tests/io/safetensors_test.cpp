#include "io/safetensors.h"

#include <gtest/gtest.h>

#include <random>

#include "io_test_util.h"

namespace quill {
namespace {

using testing::expect_error;
using testing::safetensors_bytes;
using testing::TempDir;

Result<std::shared_ptr<SafetensorsFile>> parse_text(const std::string& header, const std::string& data = "",
                                                    std::optional<uint64_t> header_len = std::nullopt) {
  const std::string bytes = safetensors_bytes(header, data, header_len);
  return SafetensorsFile::parse(FileBytes::copy_of(bytes.data(), bytes.size(), "mem.safetensors"));
}

Status parse_error(const std::string& header, const std::string& data = "",
                   std::optional<uint64_t> header_len = std::nullopt) {
  return parse_text(header, data, header_len).status();
}

// ---- a file written by the official Python package (tests/io/testdata/make_reference.py) ----
TEST(Safetensors, ReadsReferenceFile) {
  auto f = SafetensorsFile::open(testing::io_testdata("reference.safetensors"));
  ASSERT_TRUE(f.is_ok()) << f.status().to_string();
  EXPECT_EQ((*f)->metadata().at("format"), "pt");
  EXPECT_EQ((*f)->metadata().at("note"), "quill reference");
  EXPECT_EQ((*f)->tensors().size(), 8u);

  auto f32 = (*f)->tensor("f32");
  ASSERT_TRUE(f32.is_ok());
  EXPECT_EQ(f32->dtype(), DType::kF32);
  EXPECT_EQ(f32->shape(), Shape({2, 3}));
  EXPECT_EQ(f32->to_f32_vector(), (std::vector<float>{-1.0f, -0.5f, 0.0f, 0.5f, 1.0f, 1.5f}));
  EXPECT_EQ((*f)->tensor("bf16")->to_f32_vector(), (std::vector<float>{1.0f, -2.0f, 0.5f, 3.75f}));
  EXPECT_EQ((*f)->tensor("f16")->to_f32_vector(), (std::vector<float>{1.5f, -0.25f, 1024.0f, 6.103515625e-05f}));
  auto i64 = (*f)->tensor("i64");
  ASSERT_TRUE(i64.is_ok());
  EXPECT_EQ(i64->data_as<int64_t>()[0], -1);
  EXPECT_EQ(i64->data_as<int64_t>()[2], int64_t(1) << 40);
  EXPECT_EQ((*f)->tensor("u8")->to_f32_vector(), (std::vector<float>{0, 1, 2, 3, 4}));
  EXPECT_EQ((*f)->tensor("bool")->to_f32_vector(), (std::vector<float>{1, 0}));
  EXPECT_EQ((*f)->tensor("f8")->dtype(), DType::kF8E4M3);
  EXPECT_EQ((*f)->tensor("f8")->to_f32_vector(), (std::vector<float>{0.5f, -448.0f, 2.0f}));
  EXPECT_EQ((*f)->tensor("empty")->shape(), Shape({0, 4}));
}

TEST(Safetensors, ViewsAreZeroCopyAndKeepTheBytesAlive) {
  const std::string header = R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})";
  const std::string padded = header + std::string((8 - (8 + header.size()) % 8) % 8, ' ');
  float vals[2] = {3.0f, -4.0f};
  const std::string bytes = safetensors_bytes(padded, std::string(reinterpret_cast<char*>(vals), 8));
  FileBytes fb = FileBytes::copy_of(bytes.data(), bytes.size(), "mem");
  const uint8_t* base = fb.data;
  Tensor t;
  {
    auto f = SafetensorsFile::parse(fb);
    ASSERT_TRUE(f.is_ok()) << f.status().to_string();
    t = *(*f)->tensor("a");
    EXPECT_EQ(static_cast<const uint8_t*>(t.data()), base + 8 + padded.size());
    EXPECT_EQ((*f)->find("a")->offset, 8 + padded.size());
  }
  fb = {};  // only the tensor's owner holds the bytes now
  EXPECT_EQ(t.to_f32_vector(), (std::vector<float>{3.0f, -4.0f}));
}

TEST(Safetensors, WriteReadRoundTrip) {
  TempDir dir;
  std::mt19937 rng(1234);
  std::vector<std::pair<std::string, Tensor>> tensors;
  auto add = [&](const std::string& name, DType dt, Shape shape) {
    Tensor t = Tensor::empty(dt, shape);
    auto* p = static_cast<uint8_t*>(t.data());
    for (int64_t i = 0; i < t.nbytes(); ++i) p[i] = uint8_t(rng());
    if (dt == DType::kBool)
      for (int64_t i = 0; i < t.nbytes(); ++i) p[i] &= 1;
    tensors.emplace_back(name, t);
  };
  add("u8", DType::kU8, {3});  // odd byte count first: the writer must still keep f32/f64 aligned
  add("w.f32", DType::kF32, {3, 5});
  add("w.bf16", DType::kBF16, {7});
  add("w.f64", DType::kF64, {2, 2});
  add("w.i16", DType::kI16, {1, 1, 3});
  add("scalar", DType::kF32, {});
  add("empty", DType::kF16, {0, 3});
  add("flag", DType::kBool, {5});
  const std::string path = dir.file("rt.safetensors");
  ASSERT_TRUE(write_safetensors(path, tensors, {{"k", "v"}}).is_ok());

  auto f = SafetensorsFile::open(path);
  ASSERT_TRUE(f.is_ok()) << f.status().to_string();
  EXPECT_EQ((*f)->metadata(), (std::map<std::string, std::string>{{"k", "v"}}));
  ASSERT_EQ((*f)->tensors().size(), tensors.size());
  uint64_t data_start = UINT64_MAX;
  for (const auto& info : (*f)->tensors()) data_start = std::min(data_start, info.offset);
  EXPECT_EQ(data_start % 8, 0u);
  for (const auto& [name, want] : tensors) {
    auto got = (*f)->tensor(name);
    ASSERT_TRUE(got.is_ok()) << name;
    EXPECT_EQ(got->dtype(), want.dtype()) << name;
    EXPECT_EQ(got->shape(), want.shape()) << name;
    EXPECT_EQ(0, std::memcmp(got->data(), want.data(), size_t(want.nbytes()))) << name;
    EXPECT_EQ(reinterpret_cast<uintptr_t>(got->data()) % uintptr_t(dtype_traits(want.dtype()).block_bytes), 0u) << name;
  }
}

TEST(Safetensors, WriterRejectsBlockTypesAndDuplicates) {
  TempDir dir;
  expect_error(write_safetensors(dir.file("a"), {{"q", Tensor::empty(DType::kQ8_0, {1, 32})}}),
               {"safetensors cannot hold dtype q8_0", "tensor 'q'"});
  const Tensor t = Tensor::empty(DType::kF32, {2});
  expect_error(write_safetensors(dir.file("b"), {{"x", t}, {"x", t}}), {"duplicate tensor name", "tensor 'x'"});
  expect_error(write_safetensors(dir.file("c"), {{"bad\xff", t}}), {"not valid UTF-8"});
}

TEST(Safetensors, MisalignedTensorIsCopiedNotMisread) {
  // A legal file whose f32 data starts at an odd offset.
  const std::string header = R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[1,9]}})";
  float vals[2] = {1.25f, -8.0f};
  std::string data = "x";
  data.append(reinterpret_cast<char*>(vals), 8);
  auto f = parse_text(header, data);
  ASSERT_TRUE(f.is_ok()) << f.status().to_string();
  auto t = (*f)->tensor("a");
  ASSERT_TRUE(t.is_ok());
  EXPECT_EQ(reinterpret_cast<uintptr_t>(t->data()) % 4, 0u);
  EXPECT_EQ(t->to_f32_vector(), (std::vector<float>{1.25f, -8.0f}));
}

TEST(Safetensors, MissingTensorNamesFileAndTensor) {
  auto f = parse_text("{}");
  ASSERT_TRUE(f.is_ok());
  expect_error((*f)->tensor("nope").status(), {"mem.safetensors", "tensor 'nope'", "no such tensor"});
}

// ---- corrupted and hostile files: each error names the file and says what was wrong ----
TEST(SafetensorsCorrupt, TooShort) {
  const std::string bytes = "\x05\0\0\0\0";
  expect_error(SafetensorsFile::parse(FileBytes::copy_of(bytes.data(), 5, "short.st")).status(),
               {"file 'short.st'", "too short", "expected >= 8 bytes, found 5 bytes"});
  TempDir dir;
  testing::write_bytes(dir.file("empty.safetensors"), "");
  expect_error(SafetensorsFile::open(dir.file("empty.safetensors")).status(), {"empty.safetensors", "found 0 bytes"});
}

TEST(SafetensorsCorrupt, HeaderLengthLies) {
  expect_error(parse_error("{}", "", 100),
               {"mem.safetensors", "header length exceeds the file", "expected <= 2 bytes, found 100 bytes"});
  expect_error(parse_error("{}", "", uint64_t(1) << 40), {"absurd", "found 1099511627776 bytes"});
  expect_error(parse_error("{}", "", ~uint64_t(1)), {"absurd"});  // 2^64 - 2
}

TEST(SafetensorsCorrupt, MalformedJson) {
  expect_error(parse_error(R"({"a": {"dtype": "F32",)"), {"mem.safetensors", "header is not valid JSON"});
  expect_error(parse_error("[1, 2]"), {"not a JSON object", "found array"});
  expect_error(parse_error(R"({"a": 5})"), {"tensor 'a'", "header entry is not an object"});
  expect_error(
      parse_error(
          R"({"a":{"dtype":"F32","shape":[],"data_offsets":[0,4]},"a":{"dtype":"F32","shape":[],"data_offsets":[0,4]}})",
          "1234"),
      {"duplicate key \"a\""});
  expect_error(parse_error(std::string(100, '[') + std::string(100, ']')), {"nested deeper than 64 levels"});
}

TEST(SafetensorsCorrupt, BadDType) {
  expect_error(parse_error(R"({"w":{"dtype":"F17","shape":[1],"data_offsets":[0,4]}})", "1234"),
               {"tensor 'w'", "unknown dtype", "found \"F17\"", "BF16"});
  expect_error(parse_error(R"({"w":{"dtype":"U16","shape":[1],"data_offsets":[0,2]}})", "12"),
               {"tensor 'w'", "not supported by Quill"});
  expect_error(parse_error(R"({"w":{"shape":[1],"data_offsets":[0,4]}})", "1234"),
               {"tensor 'w'", "missing or non-string \"dtype\""});
}

TEST(SafetensorsCorrupt, BadShapes) {
  expect_error(parse_error(R"({"w":{"dtype":"F32","shape":[-1],"data_offsets":[0,4]}})", "1234"),
               {"tensor 'w'", "negative dimension -1"});
  expect_error(parse_error(R"({"w":{"dtype":"F32","shape":[1.5],"data_offsets":[0,4]}})", "1234"),
               {"dimension is not an integer: 1.5"});
  expect_error(parse_error(R"({"w":{"dtype":"F32","shape":"x","data_offsets":[0,4]}})", "1234"),
               {"non-list \"shape\""});
  expect_error(parse_error(R"({"w":{"dtype":"F32","shape":[1,1,1,1,1,1,1,1,1],"data_offsets":[0,4]}})", "1234"),
               {"too many dimensions", "expected rank <= 8, found rank 9"});
  expect_error(parse_error(R"({"w":{"dtype":"F32","shape":[4611686018427387904,4],"data_offsets":[0,4]}})", "1234"),
               {"element count of shape [4611686018427387904, 4] overflows"});
  expect_error(parse_error(R"({"w":{"dtype":"F32","shape":[2305843009213693952],"data_offsets":[0,4]}})", "1234"),
               {"byte size of shape", "overflows"});
  expect_error(parse_error(R"({"w":{"dtype":"F32","shape":[18446744073709551615],"data_offsets":[0,4]}})", "1234"),
               {"too large"});
  // numel is 0, but the strides of a view (products of trailing dims) would overflow.
  expect_error(parse_error(R"({"w":{"dtype":"F32","shape":[0,4611686018427387904,4],"data_offsets":[0,0]}})"),
               {"tensor 'w'", "overflows"});
}

TEST(SafetensorsCorrupt, BadOffsets) {
  expect_error(parse_error(R"({"w":{"dtype":"F32","shape":[1],"data_offsets":[0]}})", "1234"),
               {"tensor 'w'", "[begin, end]", "found [0]"});
  expect_error(parse_error(R"({"w":{"dtype":"F32","shape":[1],"data_offsets":[-4,0]}})", "1234"), {"[begin, end]"});
  expect_error(parse_error(R"({"w":{"dtype":"F32","shape":[1],"data_offsets":[4,0]}})", "1234"), {"end < begin"});
  expect_error(parse_error(R"({"w":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})", "1234"),
               {"outside the data section", "expected end <= 4, found end = 8"});
  expect_error(parse_error(R"({"w":{"dtype":"F32","shape":[2,2],"data_offsets":[0,12]}})", std::string(16, 'x')),
               {"tensor 'w'", "byte size does not match", "expected 16 bytes, found 12 bytes"});
}

TEST(SafetensorsCorrupt, OverlappingTensors) {
  expect_error(parse_error(R"({"a":{"dtype":"F32","shape":[4],"data_offsets":[0,16]},
                               "b":{"dtype":"F32","shape":[4],"data_offsets":[8,24]}})",
                           std::string(24, 'x')),
               {"tensor 'b'", "overlap those of tensor 'a'", "expected begin >= 16, found begin = 8"});
  // A big tensor hiding a small one behind a neighbour is still caught.
  expect_error(parse_error(R"({"big":{"dtype":"U8","shape":[32],"data_offsets":[0,32]},
                               "x":{"dtype":"U8","shape":[4],"data_offsets":[0,4]},
                               "y":{"dtype":"U8","shape":[4],"data_offsets":[20,24]}})",
                           std::string(32, 'x')),
               {"overlap"});
  // Empty tensors overlap nothing; adjacent ones are fine.
  EXPECT_TRUE(parse_text(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},
                             "e":{"dtype":"F32","shape":[0],"data_offsets":[2,2]},
                             "b":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})",
                         std::string(8, 'x'))
                  .is_ok());
}

TEST(SafetensorsCorrupt, BadMetadata) {
  expect_error(parse_error(R"({"__metadata__":{"a":1}})"), {"__metadata__ value for \"a\" is not a string"});
  expect_error(parse_error(R"({"__metadata__":[]})"), {"__metadata__ is not an object"});
}

}  // namespace
}  // namespace quill
