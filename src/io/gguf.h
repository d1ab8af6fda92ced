// GGUF (versions 2 and 3) reader and writer. The reader maps the file, checks every count and
// offset against the file size before allocating anything (a hostile header cannot cause a huge
// allocation or a long loop), and returns zero-copy tensor views. The writer emits version 3.
//
// Shapes: GGUF stores dims innermost-first (ggml's ne[0] is the contiguous one); Quill shapes
// are outermost-first, so a GGUF tensor with ne = [K, N] is a Quill tensor of shape [N, K].
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "io/file_bytes.h"
#include "quill/status.h"
#include "quill/tensor.h"

namespace quill {

inline constexpr uint32_t kGgufVersion = 3;
inline constexpr uint32_t kGgufDefaultAlignment = 32;
inline constexpr uint32_t kGgufMaxAlignment = 1u << 20;  // real files use 32..64 KiB; more is hostile
inline constexpr int kGgufMaxDims = 4;                   // ggml's GGML_MAX_DIMS
inline constexpr int kGgufMaxArrayNesting = 8;           // arrays of arrays of ...

// ---- ggml tensor types: the one table that maps them to Quill dtypes lives in gguf.cpp ----
std::optional<uint32_t> gguf_type_for(DType t);                // nullopt: no ggml type for it
std::optional<DType> dtype_for_gguf_type(uint32_t ggml_type);  // nullopt: Quill cannot read it
std::string ggml_type_name(uint32_t ggml_type);                // "q4_K", or "type 99" when unknown

// ---- metadata values ----
enum class GgufValueType : uint32_t {
  kU8 = 0,
  kI8 = 1,
  kU16 = 2,
  kI16 = 3,
  kU32 = 4,
  kI32 = 5,
  kF32 = 6,
  kBool = 7,
  kString = 8,
  kArray = 9,
  kU64 = 10,
  kI64 = 11,
  kF64 = 12,
};
const char* gguf_value_type_name(GgufValueType t);
size_t gguf_value_type_size(GgufValueType t);  // bytes of a scalar; 0 for string and array

class GgufValue {
 public:
  GgufValue() = default;  // u8 0
  static GgufValue u8(uint8_t v) { return scalar(GgufValueType::kU8, v); }
  static GgufValue i8(int8_t v) { return scalar(GgufValueType::kI8, uint64_t(int64_t(v))); }
  static GgufValue u16(uint16_t v) { return scalar(GgufValueType::kU16, v); }
  static GgufValue i16(int16_t v) { return scalar(GgufValueType::kI16, uint64_t(int64_t(v))); }
  static GgufValue u32(uint32_t v) { return scalar(GgufValueType::kU32, v); }
  static GgufValue i32(int32_t v) { return scalar(GgufValueType::kI32, uint64_t(int64_t(v))); }
  static GgufValue u64(uint64_t v) { return scalar(GgufValueType::kU64, v); }
  static GgufValue i64(int64_t v) { return scalar(GgufValueType::kI64, uint64_t(v)); }
  static GgufValue f32(float v);
  static GgufValue f64(double v);
  static GgufValue boolean(bool v) { return scalar(GgufValueType::kBool, v ? 1 : 0); }
  static GgufValue string(std::string v);
  // An array of `elem`-typed values; error if an item has another type.
  static Result<GgufValue> array(GgufValueType elem, const std::vector<GgufValue>& items);
  static GgufValue strings(const std::vector<std::string>& items);

  GgufValueType type() const { return type_; }
  GgufValueType elem_type() const { return elem_type_; }  // arrays only
  bool is_integer() const;
  bool is_float() const { return type_ == GgufValueType::kF32 || type_ == GgufValueType::kF64; }

  std::optional<int64_t> as_int() const;    // integer types whose value fits int64 (and bool)
  std::optional<uint64_t> as_uint() const;  // non-negative integer types
  std::optional<double> as_double() const;  // floats and integers
  std::optional<bool> as_bool() const;
  const std::string* as_string() const { return type_ == GgufValueType::kString ? &str_ : nullptr; }

  size_t array_size() const;     // 0 for non-arrays
  GgufValue at(size_t i) const;  // array element i (i < array_size())

  nlohmann::json to_json() const;
  bool operator==(const GgufValue& o) const;

 private:
  friend class GgufReaderImpl;
  friend class GgufWriter;
  static GgufValue decode(GgufValueType t, const uint8_t* p);  // a scalar from its file bytes
  static GgufValue scalar(GgufValueType t, uint64_t bits) {
    GgufValue v;
    v.type_ = t;
    v.bits_ = bits;
    return v;
  }
  GgufValueType type_ = GgufValueType::kU8;
  GgufValueType elem_type_ = GgufValueType::kU8;
  uint64_t bits_ = 0;  // integers sign-extended; floats as the bits of a double
  std::string str_;
  std::vector<uint8_t> raw_;      // numeric/bool arrays: the elements as stored in the file
  std::vector<GgufValue> items_;  // string and nested arrays
};

// ---- reader ----
// Metadata the writer adds to any file with tq2_0_g128 tensors: ggml type 42 is also upstream
// ggml's Q2_0, and this key tells readers which one the file holds.
inline constexpr const char* kGgufTq2LayoutKey = "quill.tq2_0_g128.layout";

struct GgufTensorInfo {
  std::string name;
  uint32_t ggml_type = 0;
  DType dtype = DType::kF32;
  std::vector<uint64_t> ne;  // as stored: innermost first
  Shape shape;               // Quill order: outermost first
  uint64_t offset = 0;       // absolute byte offset in the file
  uint64_t nbytes = 0;       // as stored
  // >= 0: a quant::ForeignBlocks layout (another writer's 1-/2-bit type) converted on read into
  // `dtype` (src/quant/foreign_blocks.h); -1: stored as `dtype`.
  int foreign = -1;
};

class GgufFile {
 public:
  static Result<std::shared_ptr<GgufFile>> open(const std::string& path);
  static Result<std::shared_ptr<GgufFile>> parse(FileBytes bytes);

  const std::string& path() const { return bytes_.path; }
  uint32_t version() const { return version_; }
  uint64_t alignment() const { return alignment_; }
  uint64_t data_offset() const { return data_offset_; }

  const std::vector<std::pair<std::string, GgufValue>>& metadata() const { return kvs_; }  // file order
  const GgufValue* find(const std::string& key) const;
  // Metadata as one JSON object, key -> value (arrays as JSON arrays).
  nlohmann::json metadata_json() const;

  const std::vector<GgufTensorInfo>& tensors() const { return infos_; }  // in tensor-info order
  const GgufTensorInfo* find_tensor(const std::string& name) const;
  Result<Tensor> tensor(const std::string& name) const;  // zero-copy view (copied only if misaligned)

 private:
  friend class GgufReaderImpl;
  FileBytes bytes_;
  uint32_t version_ = 0;
  uint64_t alignment_ = kGgufDefaultAlignment;
  uint64_t data_offset_ = 0;
  std::vector<std::pair<std::string, GgufValue>> kvs_;
  std::map<std::string, size_t> kv_index_;
  std::vector<GgufTensorInfo> infos_;
  std::map<std::string, size_t> tensor_index_;
};

// ---- writer ----
// Collects metadata and tensors, then writes a version-3 file: header, KVs, tensor infos,
// padding to the alignment, and each tensor's bytes padded to the alignment. Tensors are held by
// shared ownership until written, so views into a map or an arena can be passed directly.
class GgufWriter {
 public:
  // An alignment other than 32 is recorded as general.alignment (u32), as readers expect.
  explicit GgufWriter(uint32_t alignment = kGgufDefaultAlignment);

  Status add(const std::string& key, GgufValue value);          // error on a duplicate key
  Status add_tensor(const std::string& name, const Tensor& t);  // contiguous CPU tensor, rank <= 4
  Status write(const std::string& path) const;                  // written beside `path`, then renamed
  Result<std::vector<uint8_t>> to_bytes() const;

 private:
  class Bytes;
  static void put_value(Bytes& out, const GgufValue& v);
  template <typename Sink>
  Status emit(Sink& sink) const;
  uint32_t alignment_;
  std::vector<std::pair<std::string, GgufValue>> kvs_;
  std::vector<std::pair<std::string, Tensor>> tensors_;
};

}  // namespace quill
