// GGUF version-3 writer.
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "io/gguf.h"
#include "io/json_util.h"
#include "io/output_file.h"

namespace quill {

class GgufWriter::Bytes {
 public:
  template <typename T>
  void put(T v) {
    const auto* p = reinterpret_cast<const uint8_t*>(&v);
    buf.insert(buf.end(), p, p + sizeof(T));
  }
  void put_string(const std::string& s) {
    put(uint64_t(s.size()));
    buf.insert(buf.end(), s.begin(), s.end());
  }
  std::vector<uint8_t> buf;
};

namespace {
uint64_t align_up(uint64_t x, uint64_t a) { return x + (a - x % a) % a; }

}  // namespace

GgufWriter::GgufWriter(uint32_t alignment) : alignment_(alignment) {
  if (alignment != kGgufDefaultAlignment) kvs_.emplace_back("general.alignment", GgufValue::u32(alignment));
}

Status GgufWriter::add(const std::string& key, GgufValue value) {
  for (const auto& kv : kvs_)
    if (kv.first == key) {
      if (key == "general.alignment" && kv.second == value) return Status::ok();
      return invalid_argument("duplicate GGUF metadata key '", key, "'");
    }
  if (key == "general.alignment" && !(value == GgufValue::u32(alignment_)))
    return invalid_argument("general.alignment is set by the GgufWriter constructor")
        .with_expected_found(str_cat("uint32 ", alignment_), dump_json(value.to_json()).substr(0, 40));
  kvs_.emplace_back(key, std::move(value));
  return Status::ok();
}

Status GgufWriter::add_tensor(const std::string& name, const Tensor& t) {
  if (name.empty()) return invalid_argument("GGUF tensor names must not be empty");
  for (const auto& e : tensors_)
    if (e.first == name) return invalid_argument("duplicate tensor name").with_tensor(name);
  if (!gguf_type_for(t.dtype()))
    return unsupported("GGUF has no type for dtype ", dtype_name(t.dtype())).with_tensor(name);
  if (t.device() != Device::kCPU || !t.is_contiguous() || !t.defined())
    return invalid_argument("only defined, contiguous CPU tensors can be written").with_tensor(name);
  if (t.rank() > kGgufMaxDims)
    return invalid_argument("GGUF tensors have at most ", kGgufMaxDims, " dimensions")
        .with_tensor(name)
        .with_expected_found(str_cat("rank <= ", kGgufMaxDims), str_cat("rank ", t.rank()));
  const int64_t block = dtype_traits(t.dtype()).block_size;
  if (block > 1 && (t.rank() == 0 || t.dim(-1) % block != 0))
    return invalid_argument("row length is not a multiple of the block size")
        .with_tensor(name)
        .with_expected_found(str_cat("multiple of ", block), t.shape().to_string());
  tensors_.emplace_back(name, t);
  if (t.dtype() == DType::kTQ2_0_G128) {
    bool marked = false;
    for (const auto& kv : kvs_) marked |= kv.first == kGgufTq2LayoutKey;
    if (!marked)
      kvs_.emplace_back(kGgufTq2LayoutKey, GgufValue::string("128 weights per 34-byte block: u8 qs[32] (2-bit codes, "
                                                             "LSB first; 0 = -1, 1 = 0, 2 = +1) then f16 d"));
  }
  return Status::ok();
}

void GgufWriter::put_value(Bytes& out, const GgufValue& v) {
  if (v.type() == GgufValueType::kString) {
    out.put_string(*v.as_string());
    return;
  }
  if (v.type() == GgufValueType::kArray) {
    out.put(uint32_t(v.elem_type()));
    out.put(uint64_t(v.array_size()));
    // Numeric arrays are kept as their file bytes; writing those keeps every bit (NaN payloads).
    if (gguf_value_type_size(v.elem_type()))
      out.buf.insert(out.buf.end(), v.raw_.begin(), v.raw_.end());
    else
      for (const auto& item : v.items_) put_value(out, item);
    return;
  }
  // Scalars: the low bytes of the little-endian integer, or the float narrowed to its width.
  if (v.type() == GgufValueType::kF32) {
    out.put(float(*v.as_double()));
  } else if (v.type() == GgufValueType::kF64) {
    out.put(*v.as_double());
  } else {
    const uint64_t bits = v.type() == GgufValueType::kU64 ? *v.as_uint() : uint64_t(*v.as_int());
    const size_t n = gguf_value_type_size(v.type());
    const auto* p = reinterpret_cast<const uint8_t*>(&bits);
    out.buf.insert(out.buf.end(), p, p + n);
  }
}

template <typename Sink>
Status GgufWriter::emit(Sink& sink) const {
  if (alignment_ == 0 || alignment_ > kGgufMaxAlignment || (alignment_ & (alignment_ - 1)) != 0)
    return invalid_argument("GGUF alignment must be a power of two <= ", kGgufMaxAlignment)
        .with_expected_found("power of two", str_cat(alignment_));
  Bytes head;
  head.buf = {'G', 'G', 'U', 'F'};
  head.put(kGgufVersion);
  head.put(uint64_t(tensors_.size()));
  head.put(uint64_t(kvs_.size()));
  for (const auto& [key, value] : kvs_) {
    head.put_string(key);
    head.put(uint32_t(value.type()));
    put_value(head, value);
  }
  uint64_t offset = 0;
  for (const auto& [name, t] : tensors_) {
    head.put_string(name);
    head.put(uint32_t(t.rank()));
    for (int i = t.rank() - 1; i >= 0; --i) head.put(uint64_t(t.dim(i)));  // innermost first
    head.put(*gguf_type_for(t.dtype()));
    head.put(offset);
    offset = align_up(offset + uint64_t(t.nbytes()), alignment_);
  }
  head.buf.resize(size_t(align_up(head.buf.size(), alignment_)), 0);
  if (!sink(head.buf.data(), head.buf.size())) return io_error("write failed");
  const std::vector<uint8_t> zeros(alignment_, 0);
  for (const auto& [name, t] : tensors_) {
    const auto n = uint64_t(t.nbytes());
    if (n && !sink(t.data(), size_t(n))) return io_error("write failed").with_tensor(name);
    const uint64_t pad = align_up(n, alignment_) - n;
    if (pad && !sink(zeros.data(), size_t(pad))) return io_error("write failed").with_tensor(name);
  }
  return Status::ok();
}

Result<std::vector<uint8_t>> GgufWriter::to_bytes() const {
  std::vector<uint8_t> out;
  auto sink = [&](const void* p, size_t n) {
    const auto* b = static_cast<const uint8_t*>(p);
    out.insert(out.end(), b, b + n);
    return true;
  };
  QUILL_RETURN_IF_ERROR(emit(sink));
  return out;
}

Status GgufWriter::write(const std::string& path) const {
  return write_output_file(path, [&](std::FILE* f) -> Status {
    auto sink = [&](const void* p, size_t n) { return std::fwrite(p, 1, n, f) == n; };
    Status st = emit(sink);
    if (!st.is_ok() && st.code() == ErrorCode::kIo) return io_error("cannot write: ", std::strerror(errno));
    return st;
  });
}

}  // namespace quill
