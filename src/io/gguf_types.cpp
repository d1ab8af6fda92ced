// ggml tensor-type table and GGUF metadata values.
#include <cmath>
#include <cstring>

#include "io/gguf.h"

namespace quill {

namespace {

// The ONE table that ties ggml type ids to Quill dtypes (ids from ggml.h's enum ggml_type).
// Types Quill cannot read have no dtype; they are listed so errors can name them.
// tq2_0_g128 is Quill's own ternary format; ggml has no such type, so it takes an id ggml does
// not use (42). ggml's tq2_0 (35) is a different layout (256-element blocks) and is not read.
// fp8 e4m3 (one byte per weight; its per-row f32 scales are a separate "<name>_scale" tensor)
// has no ggml type either: Quill writes and reads 43.
struct GgmlType {
  uint32_t id;
  const char* name;
  std::optional<DType> dtype;
};
constexpr GgmlType kGgmlTypes[] = {
    {0, "f32", DType::kF32},         {1, "f16", DType::kF16},       {2, "q4_0", std::nullopt},
    {3, "q4_1", std::nullopt},       {6, "q5_0", std::nullopt},     {7, "q5_1", std::nullopt},
    {8, "q8_0", DType::kQ8_0},       {9, "q8_1", std::nullopt},     {10, "q2_K", std::nullopt},
    {11, "q3_K", std::nullopt},      {12, "q4_K", std::nullopt},    {13, "q5_K", std::nullopt},
    {14, "q6_K", std::nullopt},      {15, "q8_K", std::nullopt},    {16, "iq2_xxs", std::nullopt},
    {17, "iq2_xs", std::nullopt},    {18, "iq3_xxs", std::nullopt}, {19, "iq1_s", std::nullopt},
    {20, "iq4_nl", std::nullopt},    {21, "iq3_s", std::nullopt},   {22, "iq2_s", std::nullopt},
    {23, "iq4_xs", std::nullopt},    {24, "i8", DType::kI8},        {25, "i16", DType::kI16},
    {26, "i32", DType::kI32},        {27, "i64", DType::kI64},      {28, "f64", DType::kF64},
    {29, "iq1_m", std::nullopt},     {30, "bf16", DType::kBF16},    {34, "tq1_0", std::nullopt},
    {35, "tq2_0", std::nullopt},     {39, "mxfp4", std::nullopt},   {41, "q1_0", std::nullopt},
    {42, "tq2_0_g128", DType::kTQ2_0_G128},                         {43, "f8_e4m3", DType::kF8E4M3},
    {142, "pq2_0", std::nullopt},    {143, "ptq1_0", std::nullopt},
};

const GgmlType* find_ggml_type(uint32_t id) {
  for (const auto& t : kGgmlTypes)
    if (t.id == id) return &t;
  return nullptr;
}

size_t scalar_size(GgufValueType t) {
  switch (t) {
    case GgufValueType::kU8:
    case GgufValueType::kI8:
    case GgufValueType::kBool:
      return 1;
    case GgufValueType::kU16:
    case GgufValueType::kI16:
      return 2;
    case GgufValueType::kU32:
    case GgufValueType::kI32:
    case GgufValueType::kF32:
      return 4;
    case GgufValueType::kU64:
    case GgufValueType::kI64:
    case GgufValueType::kF64:
      return 8;
    default:
      return 0;
  }
}

// Decode one element of a packed numeric array into a scalar value.
GgufValue decode_scalar(GgufValueType t, const uint8_t* p) {
  switch (t) {
    case GgufValueType::kU8:
      return GgufValue::u8(p[0]);
    case GgufValueType::kI8:
      return GgufValue::i8(int8_t(p[0]));
    case GgufValueType::kBool:
      return GgufValue::boolean(p[0] != 0);
    case GgufValueType::kU16: {
      uint16_t v;
      std::memcpy(&v, p, 2);
      return GgufValue::u16(v);
    }
    case GgufValueType::kI16: {
      int16_t v;
      std::memcpy(&v, p, 2);
      return GgufValue::i16(v);
    }
    case GgufValueType::kU32: {
      uint32_t v;
      std::memcpy(&v, p, 4);
      return GgufValue::u32(v);
    }
    case GgufValueType::kI32: {
      int32_t v;
      std::memcpy(&v, p, 4);
      return GgufValue::i32(v);
    }
    case GgufValueType::kF32: {
      float v;
      std::memcpy(&v, p, 4);
      return GgufValue::f32(v);
    }
    case GgufValueType::kU64: {
      uint64_t v;
      std::memcpy(&v, p, 8);
      return GgufValue::u64(v);
    }
    case GgufValueType::kI64: {
      int64_t v;
      std::memcpy(&v, p, 8);
      return GgufValue::i64(v);
    }
    case GgufValueType::kF64: {
      double v;
      std::memcpy(&v, p, 8);
      return GgufValue::f64(v);
    }
    default:
      return {};
  }
}

double bits_to_double(uint64_t b) {
  double d;
  std::memcpy(&d, &b, 8);
  return d;
}
uint64_t double_to_bits(double d) {
  uint64_t b;
  std::memcpy(&b, &d, 8);
  return b;
}

}  // namespace

std::optional<uint32_t> gguf_type_for(DType t) {
  for (const auto& g : kGgmlTypes)
    if (g.dtype == t) return g.id;
  return std::nullopt;
}

std::optional<DType> dtype_for_gguf_type(uint32_t ggml_type) {
  const GgmlType* g = find_ggml_type(ggml_type);
  return g ? g->dtype : std::nullopt;
}

std::string ggml_type_name(uint32_t ggml_type) {
  const GgmlType* g = find_ggml_type(ggml_type);
  return g ? std::string(g->name) : str_cat("type ", ggml_type);
}

const char* gguf_value_type_name(GgufValueType t) {
  switch (t) {
    case GgufValueType::kU8:
      return "uint8";
    case GgufValueType::kI8:
      return "int8";
    case GgufValueType::kU16:
      return "uint16";
    case GgufValueType::kI16:
      return "int16";
    case GgufValueType::kU32:
      return "uint32";
    case GgufValueType::kI32:
      return "int32";
    case GgufValueType::kF32:
      return "float32";
    case GgufValueType::kBool:
      return "bool";
    case GgufValueType::kString:
      return "string";
    case GgufValueType::kArray:
      return "array";
    case GgufValueType::kU64:
      return "uint64";
    case GgufValueType::kI64:
      return "int64";
    case GgufValueType::kF64:
      return "float64";
  }
  return "unknown";
}

size_t gguf_value_type_size(GgufValueType t) { return scalar_size(t); }

GgufValue GgufValue::decode(GgufValueType t, const uint8_t* p) { return decode_scalar(t, p); }

GgufValue GgufValue::f32(float v) { return scalar(GgufValueType::kF32, double_to_bits(double(v))); }
GgufValue GgufValue::f64(double v) { return scalar(GgufValueType::kF64, double_to_bits(v)); }

GgufValue GgufValue::string(std::string v) {
  GgufValue g;
  g.type_ = GgufValueType::kString;
  g.str_ = std::move(v);
  return g;
}

Result<GgufValue> GgufValue::array(GgufValueType elem, const std::vector<GgufValue>& items) {
  GgufValue g;
  g.type_ = GgufValueType::kArray;
  g.elem_type_ = elem;
  const size_t esize = scalar_size(elem);
  for (const auto& it : items) {
    if (it.type_ != elem)
      return invalid_argument("GGUF array item has the wrong type")
          .with_expected_found(gguf_value_type_name(elem), gguf_value_type_name(it.type_));
    if (esize == 0) {
      g.items_.push_back(it);
      continue;
    }
    // Pack as stored in the file (little-endian, narrowed to the element width).
    uint8_t buf[8];
    if (elem == GgufValueType::kF32) {
      const float f = float(bits_to_double(it.bits_));
      std::memcpy(buf, &f, 4);
    } else {
      std::memcpy(buf, &it.bits_, 8);
    }
    g.raw_.insert(g.raw_.end(), buf, buf + esize);
  }
  return g;
}

GgufValue GgufValue::strings(const std::vector<std::string>& items) {
  GgufValue g;
  g.type_ = GgufValueType::kArray;
  g.elem_type_ = GgufValueType::kString;
  for (const auto& s : items) g.items_.push_back(GgufValue::string(s));
  return g;
}

bool GgufValue::is_integer() const {
  switch (type_) {
    case GgufValueType::kU8:
    case GgufValueType::kI8:
    case GgufValueType::kU16:
    case GgufValueType::kI16:
    case GgufValueType::kU32:
    case GgufValueType::kI32:
    case GgufValueType::kU64:
    case GgufValueType::kI64:
      return true;
    default:
      return false;
  }
}

std::optional<int64_t> GgufValue::as_int() const {
  if (type_ == GgufValueType::kBool) return int64_t(bits_);
  if (!is_integer()) return std::nullopt;
  if (type_ == GgufValueType::kU64 && bits_ > uint64_t(INT64_MAX)) return std::nullopt;
  return int64_t(bits_);
}

std::optional<uint64_t> GgufValue::as_uint() const {
  if (!is_integer()) return std::nullopt;
  if (type_ != GgufValueType::kU64 && int64_t(bits_) < 0) return std::nullopt;
  return bits_;
}

std::optional<double> GgufValue::as_double() const {
  if (is_float()) return bits_to_double(bits_);
  if (type_ == GgufValueType::kU64) return double(bits_);
  if (is_integer()) return double(int64_t(bits_));
  return std::nullopt;
}

std::optional<bool> GgufValue::as_bool() const {
  if (type_ != GgufValueType::kBool) return std::nullopt;
  return bits_ != 0;
}

size_t GgufValue::array_size() const {
  if (type_ != GgufValueType::kArray) return 0;
  const size_t esize = scalar_size(elem_type_);
  return esize ? raw_.size() / esize : items_.size();
}

GgufValue GgufValue::at(size_t i) const {
  const size_t esize = scalar_size(elem_type_);
  if (esize) return decode_scalar(elem_type_, raw_.data() + i * esize);
  return items_[i];
}

nlohmann::json GgufValue::to_json() const {
  switch (type_) {
    case GgufValueType::kBool:
      return bits_ != 0;
    case GgufValueType::kString:
      return str_;
    case GgufValueType::kF32:
    case GgufValueType::kF64:
      return bits_to_double(bits_);
    case GgufValueType::kU64:
      return bits_;
    case GgufValueType::kArray: {
      nlohmann::json a = nlohmann::json::array();
      const size_t n = array_size();
      for (size_t i = 0; i < n; ++i) a.push_back(at(i).to_json());
      return a;
    }
    default:
      return int64_t(bits_);  // the other integers are stored sign-extended
  }
}

bool GgufValue::operator==(const GgufValue& o) const {
  if (type_ != o.type_) return false;
  if (type_ == GgufValueType::kArray) return elem_type_ == o.elem_type_ && raw_ == o.raw_ && items_ == o.items_;
  if (type_ == GgufValueType::kString) return str_ == o.str_;
  return bits_ == o.bits_;
}

}  // namespace quill
