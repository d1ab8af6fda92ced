// GGUF reader. Layout (all little-endian):
//   "GGUF" | u32 version | u64 tensor_count | u64 kv_count
//   kv_count x (string key | u32 value_type | value)
//   tensor_count x (string name | u32 n_dims | u64 ne[n_dims] | u32 ggml_type | u64 offset)
//   padding to the alignment | data section (each tensor at data_start + offset)
// where string = u64 length + bytes, and array = u32 elem_type | u64 count | elements.
#include <algorithm>
#include <cstring>
#include <limits>

#include "core/log.h"
#include "io/gguf.h"
#include "io/json_util.h"
#include "io/shape_check.h"
#include "quant/foreign_blocks.h"

namespace quill {

namespace {

// Smallest encodings, used to bound counts by the bytes left before anything is allocated.
constexpr uint64_t kMinKvBytes = 8 + 4 + 1;              // empty key, type, one-byte value
constexpr uint64_t kMinTensorInfoBytes = 8 + 4 + 4 + 8;  // empty name, n_dims = 0, type, offset

uint64_t min_value_bytes(GgufValueType t) {
  if (t == GgufValueType::kString) return 8;
  if (t == GgufValueType::kArray) return 4 + 8;
  return gguf_value_type_size(t);
}

bool valid_value_type(uint32_t t) { return t <= uint32_t(GgufValueType::kF64); }

std::string printable(const uint8_t* p, size_t n) {
  std::string s = "\"";
  static const char* hex = "0123456789abcdef";
  for (size_t i = 0; i < n; ++i) {
    if (p[i] >= 0x20 && p[i] < 0x7f && p[i] != '"' && p[i] != '\\') {
      s += char(p[i]);
    } else {
      s += "\\x";
      s += hex[p[i] >> 4];
      s += hex[p[i] & 15];
    }
  }
  return s + "\"";
}

// Alignment a view needs: the element's natural alignment (the f16 scale for block types).
uint64_t view_alignment(DType t) {
  const auto b = uint64_t(dtype_traits(t).block_bytes);
  return std::min<uint64_t>(b & (~b + 1), 8);
}

}  // namespace

class GgufReaderImpl {
 public:
  explicit GgufReaderImpl(const FileBytes& bytes) : r_(bytes.data, bytes.size) {}

  Status truncated(const std::string& what, uint64_t need) const {
    return invalid_file("truncated: file ends inside ", what)
        .with_expected_found(str_cat(need, " more bytes at offset ", r_.pos()), str_cat(r_.remaining(), " left"));
  }

  template <typename T>
  Status read(T* out, const std::string& what) {
    return r_.read(out) ? Status::ok() : truncated(what, sizeof(T));
  }

  Status read_string(std::string* out, const std::string& what) {
    uint64_t len = 0;
    QUILL_RETURN_IF_ERROR(read(&len, what + " length"));
    const uint8_t* p = nullptr;
    if (!r_.read_bytes(len, &p))
      return invalid_file(what, " length exceeds the file")
          .with_expected_found(str_cat("<= ", r_.remaining(), " bytes"), str_cat(len, " bytes"));
    out->assign(reinterpret_cast<const char*>(p), size_t(len));
    return Status::ok();
  }

  Status read_value(GgufValueType type, GgufValue* out, int depth) {
    out->type_ = type;
    switch (type) {
      case GgufValueType::kString:
        return read_string(&out->str_, "string value");
      case GgufValueType::kArray:
        return read_array(out, depth);
      case GgufValueType::kBool: {
        uint8_t b = 0;
        QUILL_RETURN_IF_ERROR(read(&b, "bool value"));
        if (b > 1) return invalid_file("bool value is neither 0 nor 1").with_expected_found("0 or 1", str_cat(int(b)));
        out->bits_ = b;
        return Status::ok();
      }
      default: {
        const size_t n = gguf_value_type_size(type);
        const uint8_t* p = nullptr;
        if (!r_.read_bytes(n, &p)) return truncated(str_cat(gguf_value_type_name(type), " value"), n);
        *out = GgufValue::decode(type, p);
        return Status::ok();
      }
    }
  }

  Status read_array(GgufValue* out, int depth) {
    if (depth >= kGgufMaxArrayNesting)
      return invalid_file("arrays nested deeper than ", kGgufMaxArrayNesting, " levels");
    uint32_t elem = 0;
    uint64_t count = 0;
    QUILL_RETURN_IF_ERROR(read(&elem, "array element type"));
    if (!valid_value_type(elem))
      return invalid_file("unknown array element type ", elem).with_expected_found("0..12", str_cat(elem));
    QUILL_RETURN_IF_ERROR(read(&count, "array length"));
    const auto etype = GgufValueType(elem);
    out->elem_type_ = etype;
    const uint64_t min_bytes = min_value_bytes(etype);
    if (count > r_.remaining() / min_bytes)
      return invalid_file("array of ", count, " ", gguf_value_type_name(etype), " values cannot fit in the file")
          .with_expected_found(str_cat("<= ", r_.remaining() / min_bytes, " elements"), str_cat(count));
    if (const size_t esize = gguf_value_type_size(etype)) {
      const uint8_t* p = nullptr;
      r_.read_bytes(count * esize, &p);  // fits: checked above
      if (etype == GgufValueType::kBool)
        for (uint64_t i = 0; i < count; ++i)
          if (p[i] > 1) return invalid_file("bool array element ", i, " is neither 0 nor 1");
      out->raw_.assign(p, p + count * esize);
      return Status::ok();
    }
    out->items_.resize(size_t(count));
    for (uint64_t i = 0; i < count; ++i) {
      Status st = read_value(etype, &out->items_[size_t(i)], depth + 1);
      if (!st.is_ok()) return st.with_context(str_cat("array element ", i));
    }
    return Status::ok();
  }

  Status read_tensor_info(GgufTensorInfo* t) {
    QUILL_RETURN_IF_ERROR(read_string(&t->name, "tensor name"));
    if (t->name.empty()) return invalid_file("empty tensor name");
    uint32_t n_dims = 0;
    QUILL_RETURN_IF_ERROR(read(&n_dims, "tensor dimension count"));
    if (n_dims > uint32_t(kGgufMaxDims))
      return invalid_file("too many dimensions").with_expected_found(str_cat("<= ", kGgufMaxDims), str_cat(n_dims));
    t->ne.resize(n_dims);
    std::vector<int64_t> dims(n_dims);
    for (uint32_t i = 0; i < n_dims; ++i) {
      QUILL_RETURN_IF_ERROR(read(&t->ne[i], "tensor dimensions"));
      if (t->ne[i] > uint64_t(std::numeric_limits<int64_t>::max()))
        return invalid_file("dimension ", t->ne[i], " is too large");
      dims[n_dims - 1 - i] = int64_t(t->ne[i]);
    }
    QUILL_RETURN_IF_ERROR(read(&t->ggml_type, "tensor type"));
    QUILL_RETURN_IF_ERROR(read(&t->offset, "tensor offset"));
    t->shape = Shape(dims);
    QUILL_RETURN_IF_ERROR(classify_two_bit_type(t));
    if (t->foreign >= 0) return Status::ok();
    auto dtype = dtype_for_gguf_type(t->ggml_type);
    if (!dtype)
      return unsupported("ggml type ", t->ggml_type, " (", ggml_type_name(t->ggml_type), ") is not supported by Quill")
          .with_expected_found("f32, f16, bf16, f64, q8_0, i8..i64 or tq2_0_g128", ggml_type_name(t->ggml_type));
    t->dtype = *dtype;
    const int64_t numel = untrusted_numel(t->shape);
    if (numel < 0) return invalid_file("element count of shape ", t->shape.to_string(), " overflows");
    const int64_t block = dtype_traits(t->dtype).block_size;
    if (block > 1 && (n_dims == 0 || t->ne[0] % uint64_t(block) != 0))
      return invalid_file("row length is not a multiple of the ", dtype_name(t->dtype), " block size")
          .with_expected_found(str_cat("multiple of ", block), str_cat(n_dims ? t->ne[0] : 1));
    auto bytes = dtype_bytes_for(t->dtype, numel);
    if (!bytes) return invalid_file("byte size of shape ", t->shape.to_string(), " overflows");
    t->nbytes = uint64_t(*bytes);
    return Status::ok();
  }

  // Ids other writers use for 1- and 2-bit blocks (docs/FORMATS.md): 41 ggml Q1_0, 142 PrismML
  // PQ2_0 (read by conversion), 143 PrismML PTQ1_0 (refused), and 42, which is Quill's (and
  // oxibonsai's) tq2_0_g128 but upstream ggml's Q2_0 (group 64): rows that are not whole 128-blocks
  // settle it here, the data extent after all tensors are read (resolve_id_42).
  Status classify_two_bit_type(GgufTensorInfo* t) {
    using quant::ForeignBlocks;
    const int64_t K = t->ne.empty() ? 1 : int64_t(t->ne[0]);
    std::optional<ForeignBlocks> kind;
    if (t->ggml_type == 143)
      return unsupported("ggml type 143 (PrismML PTQ1_0): its block layout has no published specification Quill "
                         "could verify, so it is not read (convert the model to tq2_0_g128 or q8_0 first)");
    if (t->ggml_type == 41) kind = ForeignBlocks::kGgmlQ1_0;
    if (t->ggml_type == 142) kind = ForeignBlocks::kPrismPQ2_0;
    if (t->ggml_type == 42 && K % 128 != 0 && K % 64 == 0) kind = ForeignBlocks::kGgmlQ2_0;
    if (!kind) return Status::ok();
    const quant::ForeignBlockInfo info = quant::foreign_block_info(*kind);
    if (K % info.block_size != 0)
      return invalid_file("row length is not a multiple of the ", info.name, " block size")
          .with_expected_found(str_cat("multiple of ", info.block_size), str_cat(K));
    const int64_t numel = untrusted_numel(t->shape);
    if (numel < 0) return invalid_file("element count of shape ", t->shape.to_string(), " overflows");
    const auto bytes = quant::foreign_bytes(*kind, numel);
    if (!bytes) return invalid_file("byte size of shape ", t->shape.to_string(), " overflows");
    t->foreign = int(*kind);
    t->nbytes = uint64_t(*bytes);
    t->dtype = *kind == ForeignBlocks::kGgmlQ2_0 ? DType::kQ8_0 : DType::kTQ2_0_G128;  // PQ2_0: settled on scan
    return Status::ok();
  }

  Result<std::shared_ptr<GgufFile>> parse(FileBytes bytes);

 private:
  ByteReader r_;
};

namespace {

// Id 42 with whole 128-blocks: Quill's tq2_0_g128 (34 bytes per 128) or upstream Q2_0 (18 per 64,
// 6 % more). A file Quill wrote says so (quill.quantize.type); otherwise the room each tensor has
// up to the next one decides, and a tensor too small to tell the two apart is refused.
Status resolve_id_42(GgufFile& f, std::vector<GgufTensorInfo>& infos, uint64_t data_end) {
  if (f.find(kGgufTq2LayoutKey) || f.find("quill.quantize.type")) return Status::ok();
  std::vector<GgufTensorInfo*> order;
  for (auto& t : infos) order.push_back(&t);
  std::sort(order.begin(), order.end(), [](auto* x, auto* y) { return x->offset < y->offset; });
  for (size_t i = 0; i < order.size(); ++i) {
    GgufTensorInfo& t = *order[i];
    if (t.ggml_type != 42 || t.foreign >= 0) continue;
    const uint64_t room = (i + 1 < order.size() ? order[i + 1]->offset : data_end) - t.offset;
    const int64_t numel = t.shape.numel();
    const uint64_t q2 = uint64_t(*quant::foreign_bytes(quant::ForeignBlocks::kGgmlQ2_0, numel));
    if (room < q2) continue;  // only the 128-block layout fits
    if (q2 < t.nbytes + f.alignment())
      return invalid_file("ggml type 42 is Quill's tq2_0_g128 but upstream ggml's Q2_0; this tensor is too small "
                          "to tell them apart by size and the file does not say which (no ", kGgufTq2LayoutKey, ")")
          .with_tensor(t.name);
    t.foreign = int(quant::ForeignBlocks::kGgmlQ2_0);
    t.nbytes = q2;
    t.dtype = DType::kQ8_0;
    log_info("gguf: tensor '", t.name, "' (type 42) has the size of upstream ggml Q2_0 (group 64); read as such");
  }
  return Status::ok();
}

}  // namespace

Result<std::shared_ptr<GgufFile>> GgufReaderImpl::parse(FileBytes bytes) {
  auto f = std::shared_ptr<GgufFile>(new GgufFile());
  const std::string& path = bytes.path;
  if (bytes.size < 4 || std::memcmp(bytes.data, "GGUF", 4) != 0)
    return invalid_file("not a GGUF file: wrong magic")
        .with_file(path)
        .with_expected_found("\"GGUF\"", printable(bytes.data, std::min<uint64_t>(bytes.size, 4)));
  r_.skip(4);
  uint64_t tensor_count = 0, kv_count = 0;
  QUILL_RETURN_IF_ERROR(read(&f->version_, "header").with_file(path));
  if (f->version_ != 2 && f->version_ != 3)
    return unsupported("GGUF version ", f->version_, " is not supported")
        .with_file(path)
        .with_expected_found("2 or 3", str_cat(f->version_));
  if (Status st = read(&tensor_count, "header"); !st.is_ok()) return st.with_file(path);
  if (Status st = read(&kv_count, "header"); !st.is_ok()) return st.with_file(path);
  if (kv_count > r_.remaining() / kMinKvBytes)
    return invalid_file("metadata count cannot fit in the file")
        .with_file(path)
        .with_expected_found(str_cat("<= ", r_.remaining() / kMinKvBytes), str_cat(kv_count));
  if (tensor_count > r_.remaining() / kMinTensorInfoBytes)
    return invalid_file("tensor count cannot fit in the file")
        .with_file(path)
        .with_expected_found(str_cat("<= ", r_.remaining() / kMinTensorInfoBytes), str_cat(tensor_count));

  f->kvs_.reserve(size_t(kv_count));
  for (uint64_t i = 0; i < kv_count; ++i) {
    std::string key;
    if (Status st = read_string(&key, "metadata key"); !st.is_ok())
      return st.with_file(path).with_context(str_cat("metadata entry ", i));
    auto fail = [&](Status st) { return st.with_file(path).with_context(str_cat("metadata '", key, "'")); };
    uint32_t type = 0;
    if (Status st = read(&type, "metadata type"); !st.is_ok()) return fail(st);
    if (!valid_value_type(type))
      return fail(invalid_file("unknown value type ", type).with_expected_found("0..12", str_cat(type)));
    GgufValue v;
    if (Status st = read_value(GgufValueType(type), &v, 0); !st.is_ok()) return fail(st);
    if (!f->kv_index_.emplace(key, f->kvs_.size()).second) return fail(invalid_file("duplicate metadata key"));
    f->kvs_.emplace_back(std::move(key), std::move(v));
  }

  if (const GgufValue* a = f->find("general.alignment")) {
    auto v = a->as_uint();
    if (!v || *v == 0 || *v > kGgufMaxAlignment || (*v & (*v - 1)) != 0)
      return invalid_file("general.alignment must be a power of two <= ", kGgufMaxAlignment)
          .with_file(path)
          .with_expected_found("power of two", dump_json(a->to_json()).substr(0, 40));
    f->alignment_ = *v;
  }

  if (tensor_count > r_.remaining() / kMinTensorInfoBytes)
    return invalid_file("tensor count cannot fit in the file")
        .with_file(path)
        .with_expected_found(str_cat("<= ", r_.remaining() / kMinTensorInfoBytes), str_cat(tensor_count));
  f->infos_.resize(size_t(tensor_count));
  for (uint64_t i = 0; i < tensor_count; ++i) {
    GgufTensorInfo& t = f->infos_[size_t(i)];
    Status st = read_tensor_info(&t);
    if (!st.is_ok()) {
      if (t.name.empty()) st.with_context(str_cat("tensor info ", i));
      return st.with_file(path).with_tensor(t.name);
    }
    if (!f->tensor_index_.emplace(t.name, size_t(i)).second)
      return invalid_file("duplicate tensor name").with_file(path).with_tensor(t.name);
  }

  const uint64_t a = f->alignment_;
  const uint64_t infos_end = r_.pos();
  const uint64_t data_start = infos_end + (a - infos_end % a) % a;  // no overflow: infos_end <= size, a <= 2^20
  if (tensor_count > 0 && data_start > bytes.size)
    return invalid_file("truncated: the data section is missing")
        .with_file(path)
        .with_expected_found(str_cat("data at offset ", data_start), str_cat("file of ", bytes.size, " bytes"));
  f->data_offset_ = std::min(data_start, bytes.size);
  const uint64_t data_size = bytes.size - f->data_offset_;

  for (auto& t : f->infos_) {
    if (t.offset % a != 0)
      return invalid_file("tensor offset is not aligned")
          .with_file(path)
          .with_tensor(t.name)
          .with_expected_found(str_cat("multiple of ", a), str_cat(t.offset));
    if (t.offset > data_size || t.nbytes > data_size - t.offset)
      return invalid_file("tensor data lies outside the file (truncated?)")
          .with_file(path)
          .with_tensor(t.name)
          .with_expected_found(
              str_cat("end <= ", data_size, " (data section size)"),
              t.offset > data_size ? str_cat("offset ", t.offset) : str_cat("end ", t.offset + t.nbytes));
    t.offset += f->data_offset_;
  }
  if (Status st = resolve_id_42(*f, f->infos_, bytes.size); !st.is_ok()) return st.with_file(path);
  for (auto& t : f->infos_) {
    if (t.offset + t.nbytes > bytes.size)
      return invalid_file("tensor data lies outside the file (truncated?)").with_file(path).with_tensor(t.name);
    if (t.foreign == int(quant::ForeignBlocks::kPrismPQ2_0))
      t.dtype = quant::foreign_target(quant::ForeignBlocks::kPrismPQ2_0, bytes.data + t.offset, t.shape.numel());
  }

  std::vector<const GgufTensorInfo*> order;
  for (const auto& t : f->infos_)
    if (t.nbytes > 0) order.push_back(&t);
  std::sort(order.begin(), order.end(), [](auto* x, auto* y) { return x->offset < y->offset; });
  for (size_t i = 1; i < order.size(); ++i) {
    // Sorted by start, if any two tensors overlap then two neighbours do.
    if (order[i]->offset < order[i - 1]->offset + order[i - 1]->nbytes)
      return invalid_file("tensor bytes overlap those of tensor '", order[i - 1]->name, "'")
          .with_file(path)
          .with_tensor(order[i]->name)
          .with_expected_found(str_cat("offset >= ", order[i - 1]->offset + order[i - 1]->nbytes - f->data_offset_),
                               str_cat("offset ", order[i]->offset - f->data_offset_));
  }
  f->bytes_ = std::move(bytes);
  return f;
}

Result<std::shared_ptr<GgufFile>> GgufFile::open(const std::string& path) {
  QUILL_ASSIGN_OR_RETURN(auto file, MappedFile::open(path));
  return parse(FileBytes::of(file));
}

Result<std::shared_ptr<GgufFile>> GgufFile::parse(FileBytes bytes) {
  GgufReaderImpl reader(bytes);
  return reader.parse(std::move(bytes));
}

const GgufValue* GgufFile::find(const std::string& key) const {
  auto it = kv_index_.find(key);
  return it == kv_index_.end() ? nullptr : &kvs_[it->second].second;
}

nlohmann::json GgufFile::metadata_json() const {
  nlohmann::json j = nlohmann::json::object();
  for (const auto& [k, v] : kvs_) j[k] = v.to_json();
  return j;
}

const GgufTensorInfo* GgufFile::find_tensor(const std::string& name) const {
  auto it = tensor_index_.find(name);
  return it == tensor_index_.end() ? nullptr : &infos_[it->second];
}

Result<Tensor> GgufFile::tensor(const std::string& name) const {
  const GgufTensorInfo* t = find_tensor(name);
  if (!t) return not_found("no such tensor").with_file(path()).with_tensor(name);
  const uint8_t* p = bytes_.data + t->offset;
  if (t->foreign >= 0) {
    auto converted = quant::convert_foreign_blocks(quant::ForeignBlocks(t->foreign), p, t->shape);
    if (!converted) return converted.take_status().with_file(path()).with_tensor(name);
    return std::move(*converted);
  }
  if (reinterpret_cast<uintptr_t>(p) % view_alignment(t->dtype) == 0)
    return Tensor(const_cast<uint8_t*>(p), t->dtype, t->shape, Device::kCPU, bytes_.owner);
  log_debug("gguf: tensor '", name, "' in ", path(), " is not aligned to its element size; copying it");
  Tensor copy = Tensor::empty(t->dtype, t->shape);
  if (t->nbytes) std::memcpy(copy.data(), p, size_t(t->nbytes));
  return copy;
}

}  // namespace quill
