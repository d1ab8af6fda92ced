#include "io/gguf.h"

#include <gtest/gtest.h>

#include <chrono>
#include <random>

#include "io_test_util.h"

namespace quill {
namespace {

using testing::expect_error;
using testing::Raw;
using testing::TempDir;

Result<std::shared_ptr<GgufFile>> parse(const std::string& bytes) {
  return GgufFile::parse(FileBytes::copy_of(bytes.data(), bytes.size(), "mem.gguf"));
}
Status parse_error(const Raw& r) { return parse(r.data()).status(); }

Raw header(uint64_t n_tensors, uint64_t n_kv, uint32_t version = 3) {
  Raw r;
  r.bytes("GGUF").u32(version).u64(n_tensors).u64(n_kv);
  return r;
}
Raw& tensor_info(Raw& r, const std::string& name, std::vector<uint64_t> ne, uint32_t type, uint64_t offset) {
  r.str(name).u32(uint32_t(ne.size()));
  for (uint64_t d : ne) r.u64(d);
  return r.u32(type).u64(offset);
}

// ---- the type table ----
TEST(GgufTypes, MapsGgmlIds) {
  const std::pair<DType, uint32_t> expected[] = {
      {DType::kF32, 0},   {DType::kF16, 1},         {DType::kQ8_0, 8},   {DType::kI8, 24},
      {DType::kI16, 25},  {DType::kI32, 26},        {DType::kI64, 27},   {DType::kF64, 28},
      {DType::kBF16, 30}, {DType::kTQ2_0_G128, 42}, {DType::kF8E4M3, 43}};  // 42 and 43: Quill's ids, ggml has no such
                                                                            // types
  for (auto [dt, id] : expected) {
    EXPECT_EQ(gguf_type_for(dt), id) << dtype_name(dt);
    EXPECT_EQ(dtype_for_gguf_type(id), dt) << id;
  }
  for (DType dt : {DType::kU8, DType::kBool, DType::kF8E5M2}) EXPECT_FALSE(gguf_type_for(dt)) << dtype_name(dt);
  EXPECT_FALSE(dtype_for_gguf_type(2));
  EXPECT_EQ(ggml_type_name(12), "q4_K");
  EXPECT_EQ(ggml_type_name(35), "tq2_0");
  EXPECT_EQ(ggml_type_name(1000), "type 1000");
}

// ---- a file written by the official Python package (llama.cpp's writer) ----
TEST(Gguf, ReadsReferenceFile) {
  auto g = GgufFile::open(testing::io_testdata("reference.gguf"));
  ASSERT_TRUE(g.is_ok()) << g.status().to_string();
  const GgufFile& f = **g;
  EXPECT_EQ(f.version(), 3u);
  EXPECT_EQ(f.alignment(), 32u);
  EXPECT_EQ(f.data_offset() % 32, 0u);
  EXPECT_EQ(*f.find("general.architecture")->as_string(), "quill-test");
  EXPECT_EQ(*f.find("general.name")->as_string(), "ref");
  EXPECT_EQ(f.find("test.u32")->type(), GgufValueType::kU32);
  EXPECT_EQ(f.find("test.u32")->as_uint(), 4000000000u);
  EXPECT_EQ(f.find("test.i32")->as_int(), -7);
  EXPECT_EQ(f.find("test.f32")->type(), GgufValueType::kF32);
  EXPECT_EQ(f.find("test.f32")->as_double(), 0.25);
  EXPECT_EQ(f.find("test.bool")->as_bool(), true);
  EXPECT_EQ(*f.find("test.str")->as_string(), "h\xc3\xa9llo");
  const GgufValue* ints = f.find("test.ints");
  ASSERT_EQ(ints->array_size(), 3u);
  EXPECT_EQ(ints->at(1).as_int(), -2);
  const GgufValue* strs = f.find("test.strs");
  ASSERT_EQ(strs->array_size(), 3u);
  EXPECT_EQ(*strs->at(1).as_string(), "bc");
  EXPECT_EQ(*strs->at(2).as_string(), "");
  EXPECT_EQ(f.metadata_json()["test.strs"], nlohmann::json({"a", "bc", ""}));

  ASSERT_EQ(f.tensors().size(), 3u);
  auto w = f.tensor("w");  // numpy shape (2, 3): GGUF ne = [3, 2]
  ASSERT_TRUE(w.is_ok());
  EXPECT_EQ(f.find_tensor("w")->ne, (std::vector<uint64_t>{3, 2}));
  EXPECT_EQ(w->shape(), Shape({2, 3}));
  EXPECT_EQ(w->to_f32_vector(), (std::vector<float>{0, 1, 2, 3, 4, 5}));
  EXPECT_EQ(f.tensor("h")->to_f32_vector(), (std::vector<float>{1.5f, -2.0f, 0.125f, 65504.0f}));
  auto q = f.tensor("q");  // rows of (arange(128) - 32) in two rows of 64, as q8_0
  ASSERT_TRUE(q.is_ok());
  EXPECT_EQ(q->dtype(), DType::kQ8_0);
  EXPECT_EQ(q->shape(), Shape({2, 64}));
  EXPECT_EQ(q->nbytes(), 4 * 34);
  const auto* block = static_cast<const uint8_t*>(q->data());
  uint16_t scale;
  std::memcpy(&scale, block, 2);
  EXPECT_EQ(scale, f32_to_f16(32.0f / 127.0f));  // first block: -32..-1, amax 32
  EXPECT_EQ(int8_t(block[2]), -127);
  EXPECT_EQ(q->owner(), w->owner());  // both views share the one map
}

// ---- writer -> reader round trip ----
void round_trip(uint32_t alignment) {
  GgufWriter w(alignment);
  std::vector<std::pair<std::string, GgufValue>> kvs = {
      {"general.architecture", GgufValue::string("quill-rt")},
      {"k.u8", GgufValue::u8(250)},
      {"k.i8", GgufValue::i8(-100)},
      {"k.u16", GgufValue::u16(65000)},
      {"k.i16", GgufValue::i16(-30000)},
      {"k.u32", GgufValue::u32(4000000000u)},
      {"k.i32", GgufValue::i32(-2000000000)},
      {"k.u64", GgufValue::u64(~uint64_t(0))},
      {"k.i64", GgufValue::i64(INT64_MIN)},
      {"k.f32", GgufValue::f32(-1.5e-3f)},
      {"k.f64", GgufValue::f64(3.141592653589793)},
      {"k.bool", GgufValue::boolean(true)},
      {"k.str", GgufValue::string(std::string("nul\0in", 6))},
      {"k.strs", GgufValue::strings({"x", "", "yz"})},
      {"k.empty", *GgufValue::array(GgufValueType::kF32, {})},
      {"k.f32s", *GgufValue::array(GgufValueType::kF32, {GgufValue::f32(1.25f), GgufValue::f32(-0.0f)})},
      {"k.bools", *GgufValue::array(GgufValueType::kBool, {GgufValue::boolean(false), GgufValue::boolean(true)})},
      {"k.nested", *GgufValue::array(GgufValueType::kArray,
                                     {*GgufValue::array(GgufValueType::kI16, {GgufValue::i16(-1), GgufValue::i16(2)}),
                                      GgufValue::strings({"deep"})})},
  };
  for (const auto& [k, v] : kvs) ASSERT_TRUE(w.add(k, v).is_ok()) << k;

  std::mt19937 rng(alignment);
  std::vector<std::pair<std::string, Tensor>> tensors;
  auto add = [&](const std::string& name, DType dt, Shape shape) {
    Tensor t = Tensor::empty(dt, shape);
    for (int64_t i = 0; i < t.nbytes(); ++i) static_cast<uint8_t*>(t.data())[i] = uint8_t(rng());
    tensors.emplace_back(name, t);
    ASSERT_TRUE(w.add_tensor(name, t).is_ok()) << name;
  };
  add("f32", DType::kF32, {3, 5});
  add("f16", DType::kF16, {7});
  add("bf16", DType::kBF16, {2, 3, 1});
  add("f64", DType::kF64, {1, 1, 1, 2});
  add("i8", DType::kI8, {9});
  add("i16", DType::kI16, {3});
  add("i32", DType::kI32, {2, 2});
  add("i64", DType::kI64, {1});
  add("q8", DType::kQ8_0, {3, 64});
  add("tq2", DType::kTQ2_0_G128, {2, 256});
  add("scalar", DType::kF32, {});
  add("empty", DType::kF32, {0, 4});

  TempDir dir;
  const std::string path = dir.file("rt.gguf");
  ASSERT_TRUE(w.write(path).is_ok());
  auto bytes = w.to_bytes();
  ASSERT_TRUE(bytes.is_ok());
  EXPECT_EQ(std::filesystem::file_size(path), bytes->size());

  auto g = GgufFile::open(path);
  ASSERT_TRUE(g.is_ok()) << g.status().to_string();
  const GgufFile& f = **g;
  EXPECT_EQ(f.version(), 3u);
  EXPECT_EQ(f.alignment(), alignment);
  // general.alignment added first; the tq2_0_g128 layout key last, with the first ternary tensor.
  const size_t extra = alignment == kGgufDefaultAlignment ? 0 : 1;
  ASSERT_EQ(f.metadata().size(), kvs.size() + extra + 1);
  EXPECT_EQ(f.metadata().back().first, kGgufTq2LayoutKey);
  if (extra) {
    EXPECT_EQ(f.find("general.alignment")->as_uint(), alignment);
  }
  for (size_t i = 0; i < kvs.size(); ++i) {
    EXPECT_EQ(f.metadata()[i + extra].first, kvs[i].first);
    EXPECT_TRUE(f.metadata()[i + extra].second == kvs[i].second)
        << kvs[i].first << ": " << f.metadata()[i + extra].second.to_json();
  }
  EXPECT_EQ(f.find("k.nested")->to_json(), nlohmann::json::parse(R"([[-1, 2], ["deep"]])"));
  EXPECT_EQ(f.find("k.u64")->to_json(), nlohmann::json(~uint64_t(0)));
  EXPECT_EQ(f.find("k.f32")->as_double(), double(-1.5e-3f));

  ASSERT_EQ(f.tensors().size(), tensors.size());
  for (const auto& [name, want] : tensors) {
    const GgufTensorInfo* info = f.find_tensor(name);
    ASSERT_NE(info, nullptr) << name;
    EXPECT_EQ((info->offset - f.data_offset()) % alignment, 0u) << name;
    auto got = f.tensor(name);
    ASSERT_TRUE(got.is_ok()) << name;
    EXPECT_EQ(got->dtype(), want.dtype()) << name;
    EXPECT_EQ(got->shape(), want.shape()) << name;
    EXPECT_EQ(0, std::memcmp(got->data(), want.data(), size_t(want.nbytes()))) << name;
  }
}

TEST(Gguf, RoundTripDefaultAlignment) { round_trip(32); }
TEST(Gguf, RoundTripAlignment64) { round_trip(64); }
TEST(Gguf, RoundTripAlignment1) { round_trip(1); }  // legal; misaligned views are copied

TEST(Gguf, WriterRejectsWhatGgufCannotHold) {
  GgufWriter w;
  expect_error(w.add_tensor("u8", Tensor::empty(DType::kU8, {4})), {"GGUF has no type for dtype u8", "tensor 'u8'"});
  expect_error(w.add_tensor("r5", Tensor::empty(DType::kF32, {1, 1, 1, 1, 2})),
               {"at most 4 dimensions", "found rank 5"});
  expect_error(w.add_tensor("q", Tensor::empty(DType::kQ8_0, {32, 1})), {"row length", "multiple of 32"});
  ASSERT_TRUE(w.add_tensor("x", Tensor::empty(DType::kF32, {1})).is_ok());
  expect_error(w.add_tensor("x", Tensor::empty(DType::kF32, {1})), {"duplicate tensor name"});
  ASSERT_TRUE(w.add("a", GgufValue::u8(1)).is_ok());
  expect_error(w.add("a", GgufValue::u8(2)), {"duplicate GGUF metadata key 'a'"});
  expect_error(w.add("general.alignment", GgufValue::u32(64)),
               {"general.alignment is set by the GgufWriter constructor"});
  expect_error(GgufValue::array(GgufValueType::kI32, {GgufValue::u8(1)}).status(),
               {"wrong type", "expected int32, found uint8"});
  expect_error(GgufWriter(3).to_bytes().status(), {"power of two"});
  expect_error(GgufWriter(1u << 21).to_bytes().status(), {"power of two <= 1048576"});
}

// ---- corrupted and hostile files ----
TEST(GgufCorrupt, WrongMagicAndVersion) {
  Raw bad;
  bad.bytes("GGUX").u32(3).u64(0).u64(0);
  expect_error(parse_error(bad), {"file 'mem.gguf'", "wrong magic", "expected \"GGUF\", found \"GGUX\""});
  Raw tiny;
  tiny.bytes("G\x01");
  expect_error(parse_error(tiny), {"wrong magic", "found \"G\\x01\""});
  expect_error(parse_error(header(0, 0, 1)), {"GGUF version 1 is not supported", "expected 2 or 3, found 1"});
  expect_error(parse_error(header(0, 0, 4)), {"version 4"});
  EXPECT_TRUE(parse(header(0, 0, 2).data()).is_ok());
}

TEST(GgufCorrupt, Truncated) {
  Raw r;
  r.bytes("GGUF").u32(3).u32(0);
  expect_error(parse_error(r),
               {"truncated: file ends inside header", "expected 8 more bytes at offset 8, found 4 left"});
  Raw kv = header(0, 1);
  kv.str("key").u32(uint32_t(GgufValueType::kU64)).u32(7);  // 4 of the 8 value bytes
  expect_error(parse_error(kv), {"metadata 'key'", "truncated", "uint64 value"});
}

TEST(GgufCorrupt, HugeCountsFailFastWithoutAllocating) {
  const auto start = std::chrono::steady_clock::now();
  expect_error(parse_error(header(0, uint64_t(1) << 62)),
               {"metadata count cannot fit in the file", "found 4611686018427387904"});
  expect_error(parse_error(header(~uint64_t(0), 0)), {"tensor count cannot fit in the file", "expected <= 0"});
  Raw key = header(0, 1);
  key.u64(uint64_t(1) << 60).bytes("k").zeros(16);
  expect_error(parse_error(key), {"metadata key length exceeds the file", "found 1152921504606846976 bytes"});
  Raw arr = header(0, 1);
  arr.str("a")
      .u32(uint32_t(GgufValueType::kArray))
      .u32(uint32_t(GgufValueType::kString))
      .u64(uint64_t(1) << 61)
      .zeros(64);
  expect_error(parse_error(arr), {"metadata 'a'", "array of 2305843009213693952 string values cannot fit in the file"});
  Raw nested = header(0, 1);  // a tower of arrays, each claiming one element
  nested.str("n").u32(uint32_t(GgufValueType::kArray));
  for (int i = 0; i < 20; ++i) nested.u32(uint32_t(GgufValueType::kArray)).u64(1);
  nested.zeros(64);
  expect_error(parse_error(nested), {"metadata 'n'", "arrays nested deeper than 8 levels"});
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(1));
}

TEST(GgufCorrupt, BadValues) {
  Raw type = header(0, 1);
  type.str("k").u32(13).u32(0);
  expect_error(parse_error(type), {"metadata 'k'", "unknown value type 13"});
  Raw b = header(0, 1);
  b.str("flag").u32(uint32_t(GgufValueType::kBool)).u8(2);
  expect_error(parse_error(b), {"metadata 'flag'", "bool value is neither 0 nor 1"});
  Raw dup = header(0, 2);
  dup.str("k").u32(0).u8(1).str("k").u32(0).u8(2);
  expect_error(parse_error(dup), {"metadata 'k'", "duplicate metadata key"});
  Raw align = header(0, 1);
  align.str("general.alignment").u32(uint32_t(GgufValueType::kU32)).u32(48);
  expect_error(parse_error(align), {"general.alignment must be a power of two", "found 48"});
  Raw align_str = header(0, 1);  // not even a number, and not valid UTF-8 (must not throw)
  align_str.str("general.alignment").u32(uint32_t(GgufValueType::kString)).str("\xff\xfe");
  expect_error(parse_error(align_str), {"general.alignment must be a power of two"});
  Raw align_huge = header(0, 1);  // found by gguf_fuzz: a 400-byte file asking for 1 GiB alignment
  align_huge.str("general.alignment").u32(uint32_t(GgufValueType::kU32)).u32(1u << 30);
  expect_error(parse_error(align_huge), {"power of two <= 1048576", "found 1073741824"});
}

// One f32 tensor "w" of `ne`, type and offset as given, then `data_bytes` of data.
Raw one_tensor(std::vector<uint64_t> ne, uint32_t type, uint64_t offset, size_t data_bytes) {
  Raw r = header(1, 0);
  tensor_info(r, "w", std::move(ne), type, offset).pad_to(32).zeros(data_bytes);
  return r;
}

TEST(GgufCorrupt, BadTensorInfos) {
  expect_error(parse_error(one_tensor({1, 1, 1, 1, 1}, 0, 0, 32)),
               {"tensor 'w'", "too many dimensions", "expected <= 4, found 5"});
  expect_error(parse_error(one_tensor({4}, 2, 0, 32)), {"tensor 'w'", "ggml type 2 (q4_0) is not supported by Quill"});
  expect_error(parse_error(one_tensor({4}, 99, 0, 32)), {"tensor 'w'", "ggml type 99 (type 99)"});
  expect_error(parse_error(one_tensor({uint64_t(1) << 62, 8}, 0, 0, 32)), {"tensor 'w'", "overflows"});
  expect_error(parse_error(one_tensor({~uint64_t(0)}, 0, 0, 32)), {"tensor 'w'", "too large"});
  // Found by gguf_fuzz: numel 0, but a view's strides (products of trailing dims) would overflow.
  expect_error(parse_error(one_tensor({uint64_t(1) << 40, uint64_t(1) << 40, 0}, 0, 0, 32)),
               {"tensor 'w'", "overflows"});
  expect_error(parse_error(one_tensor({33}, 8, 0, 64)),
               {"tensor 'w'", "not a multiple of the q8_0 block size", "expected multiple of 32, found 33"});
  expect_error(parse_error(one_tensor({4}, 0, 4, 64)),
               {"tensor 'w'", "offset is not aligned", "expected multiple of 32, found 4"});
  expect_error(parse_error(one_tensor({16}, 0, 0, 32)),
               {"tensor 'w'", "outside the file", "expected end <= 32 (data section size), found end 64"});
  expect_error(parse_error(one_tensor({1}, 0, uint64_t(1) << 63, 32)), {"tensor 'w'", "outside the file"});
  Raw no_data = header(1, 0);
  tensor_info(no_data, "w", {4}, 0, 0);
  expect_error(parse_error(no_data), {"data section is missing"});
  Raw empty_name = header(1, 0);
  tensor_info(empty_name, "", {4}, 0, 0).pad_to(32).zeros(32);
  expect_error(parse_error(empty_name), {"tensor info 0", "empty tensor name"});
}

TEST(GgufCorrupt, OverlappingAndDuplicateTensors) {
  Raw r = header(3, 0);
  tensor_info(r, "a", {64}, 0, 0);   // [0, 256)
  tensor_info(r, "b", {8}, 0, 256);  // [256, 288)
  tensor_info(r, "c", {8}, 0, 224);  // [224, 256): inside a
  r.pad_to(32).zeros(320);
  expect_error(parse_error(r),
               {"tensor 'c'", "overlap those of tensor 'a'", "expected offset >= 256, found offset 224"});
  Raw dup = header(2, 0);
  tensor_info(dup, "a", {8}, 0, 0);
  tensor_info(dup, "a", {8}, 0, 32);
  dup.pad_to(32).zeros(64);
  expect_error(parse_error(dup), {"tensor 'a'", "duplicate tensor name"});
}

TEST(GgufCorrupt, EveryTruncationOfAValidFileFailsCleanly) {
  GgufWriter w;
  ASSERT_TRUE(w.add("general.name", GgufValue::string("t")).is_ok());
  ASSERT_TRUE(w.add("arr", GgufValue::strings({"a", "b"})).is_ok());
  ASSERT_TRUE(w.add_tensor("x", Tensor::empty(DType::kF32, {2, 8})).is_ok());
  auto bytes = w.to_bytes();
  ASSERT_TRUE(bytes.is_ok());
  const std::string full(bytes->begin(), bytes->end());
  ASSERT_TRUE(parse(full).is_ok());
  for (size_t n = 0; n < full.size(); ++n)
    EXPECT_FALSE(parse(full.substr(0, n)).is_ok()) << "prefix of " << n << " bytes";
}

}  // namespace
}  // namespace quill
