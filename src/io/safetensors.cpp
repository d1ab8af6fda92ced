#include "io/safetensors.h"

#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <limits>

#include "core/log.h"
#include "io/json_util.h"
#include "io/output_file.h"
#include "io/shape_check.h"

namespace quill {

namespace {

struct SafetensorsDType {
  std::string_view name;
  DType dtype;
};
constexpr std::array<SafetensorsDType, 12> kDTypes = {{
    {"F64", DType::kF64},
    {"F32", DType::kF32},
    {"F16", DType::kF16},
    {"BF16", DType::kBF16},
    {"F8_E4M3", DType::kF8E4M3},
    {"F8_E5M2", DType::kF8E5M2},
    {"I64", DType::kI64},
    {"I32", DType::kI32},
    {"I16", DType::kI16},
    {"I8", DType::kI8},
    {"U8", DType::kU8},
    {"BOOL", DType::kBool},
}};
// Valid in the format, but Quill has no dtype for them; named so the error says "unsupported".
constexpr std::array<std::string_view, 10> kKnownUnsupported = {
    "U16", "U32", "U64", "F8_E8M0", "F4", "F6_E2M3", "F6_E3M2", "C64", "F8_E4M3FNUZ", "F8_E5M2FNUZ"};

std::string supported_list() {
  std::string s;
  for (const auto& d : kDTypes) {
    if (!s.empty()) s += ' ';
    s += d.name;
  }
  return s;
}

// A short rendering of an untrusted JSON value for error messages.
std::string show(const nlohmann::json& j) {
  std::string s = dump_json(j);
  if (s.size() > 80) s = s.substr(0, 77) + "...";
  return s;
}

Result<int64_t> dimension(const nlohmann::json& j) {
  if (j.is_number_unsigned()) {
    const uint64_t v = j.get<uint64_t>();
    if (v > uint64_t(std::numeric_limits<int64_t>::max())) return invalid_file("dimension ", v, " is too large");
    return int64_t(v);
  }
  if (j.is_number_integer()) return invalid_file("negative dimension ", j.get<int64_t>());
  return invalid_file("dimension is not an integer: ", show(j));
}

Result<TensorInfo> parse_entry(const std::string& name, const nlohmann::json& e, uint64_t data_start,
                               uint64_t data_size) {
  if (!e.is_object()) return invalid_file("header entry is not an object: ", show(e));
  TensorInfo info;
  info.name = name;

  auto dt = e.find("dtype");
  if (dt == e.end() || !dt->is_string()) return invalid_file("missing or non-string \"dtype\"");
  const auto& dname = dt->get_ref<const std::string&>();
  auto d = dtype_from_safetensors_name(dname);
  if (!d) {
    if (std::find(kKnownUnsupported.begin(), kKnownUnsupported.end(), dname) != kKnownUnsupported.end())
      return unsupported("dtype ", dname, " is not supported by Quill")
          .with_expected_found("one of " + supported_list(), dname);
    return invalid_file("unknown dtype").with_expected_found("one of " + supported_list(), "\"" + dname + "\"");
  }
  info.dtype = *d;

  auto sh = e.find("shape");
  if (sh == e.end() || !sh->is_array()) return invalid_file("missing or non-list \"shape\"");
  if (sh->size() > size_t(kMaxRank))
    return invalid_file("too many dimensions")
        .with_expected_found(str_cat("rank <= ", kMaxRank), str_cat("rank ", sh->size()));
  std::vector<int64_t> dims;
  for (const auto& x : *sh) {
    auto dim = dimension(x);
    if (!dim) return dim.take_status().with_context(str_cat("shape ", show(*sh)));
    dims.push_back(*dim);
  }
  info.shape = Shape(dims);
  const int64_t numel = untrusted_numel(info.shape);
  if (numel < 0) return invalid_file("element count of shape ", info.shape.to_string(), " overflows");
  auto want_bytes = dtype_bytes_for(info.dtype, numel);
  if (!want_bytes) return invalid_file("byte size of shape ", info.shape.to_string(), " overflows");

  auto off = e.find("data_offsets");
  if (off == e.end() || !off->is_array() || off->size() != 2 || !(*off)[0].is_number_unsigned() ||
      !(*off)[1].is_number_unsigned())
    return invalid_file("\"data_offsets\" must be [begin, end] with non-negative integers")
        .with_expected_found("[begin, end]", off == e.end() ? "nothing" : show(*off));
  const uint64_t begin = (*off)[0].get<uint64_t>(), end = (*off)[1].get<uint64_t>();
  if (end < begin) return invalid_file("data_offsets end < begin").with_expected_found("begin <= end", show(*off));
  if (end > data_size)
    return invalid_file("data_offsets lie outside the data section")
        .with_expected_found(str_cat("end <= ", data_size), str_cat("end = ", end));
  if (end - begin != uint64_t(*want_bytes))
    return invalid_file("byte size does not match shape x dtype (", info.shape.to_string(), " ", dname, ")")
        .with_expected_found(str_cat(*want_bytes, " bytes"), str_cat(end - begin, " bytes"));
  info.offset = data_start + begin;
  info.nbytes = end - begin;
  return info;
}

}  // namespace

std::optional<std::string_view> safetensors_dtype_name(DType t) {
  for (const auto& d : kDTypes)
    if (d.dtype == t) return d.name;
  return std::nullopt;
}

std::optional<DType> dtype_from_safetensors_name(std::string_view name) {
  for (const auto& d : kDTypes)
    if (d.name == name) return d.dtype;
  return std::nullopt;
}

Result<std::shared_ptr<SafetensorsFile>> SafetensorsFile::open(const std::string& path) {
  QUILL_ASSIGN_OR_RETURN(auto file, MappedFile::open(path));
  return parse(FileBytes::of(file));
}

Result<std::shared_ptr<SafetensorsFile>> SafetensorsFile::parse(std::shared_ptr<MappedFile> file) {
  return parse(FileBytes::of(file));
}

Result<std::shared_ptr<SafetensorsFile>> SafetensorsFile::parse(FileBytes bytes) {
  const std::string path = bytes.path;
  if (bytes.size < 8)
    return invalid_file("too short for a safetensors file")
        .with_file(path)
        .with_expected_found(">= 8 bytes", str_cat(bytes.size, " bytes"));
  uint64_t header_len = 0;
  std::memcpy(&header_len, bytes.data, 8);
  if (header_len > kSafetensorsMaxHeaderBytes)
    return invalid_file("safetensors header length is absurd (not a safetensors file?)")
        .with_file(path)
        .with_expected_found(str_cat("<= ", kSafetensorsMaxHeaderBytes, " bytes"), str_cat(header_len, " bytes"));
  if (header_len > bytes.size - 8)
    return invalid_file("safetensors header length exceeds the file (truncated?)")
        .with_file(path)
        .with_expected_found(str_cat("<= ", bytes.size - 8, " bytes"), str_cat(header_len, " bytes"));

  const std::string_view text(reinterpret_cast<const char*>(bytes.data + 8), size_t(header_len));
  auto parsed = parse_json_checked(text, "safetensors header");
  if (!parsed) return parsed.take_status().with_file(path);
  const nlohmann::json& header = *parsed;
  if (!header.is_object())
    return invalid_file("safetensors header is not a JSON object")
        .with_file(path)
        .with_expected_found("object", header.type_name());

  auto st = std::shared_ptr<SafetensorsFile>(new SafetensorsFile());
  const uint64_t data_start = 8 + header_len;
  const uint64_t data_size = bytes.size - data_start;
  for (const auto& [name, entry] : header.items()) {
    if (name == "__metadata__") {
      if (!entry.is_object()) return invalid_file("__metadata__ is not an object").with_file(path);
      for (const auto& [k, v] : entry.items()) {
        if (!v.is_string())
          return invalid_file("__metadata__ value for \"", k, "\" is not a string")
              .with_file(path)
              .with_expected_found("string", v.type_name());
        st->metadata_[k] = v.get<std::string>();
      }
      continue;
    }
    auto info = parse_entry(name, entry, data_start, data_size);
    if (!info) return info.take_status().with_file(path).with_tensor(name);
    st->infos_.push_back(std::move(*info));
  }

  auto& infos = st->infos_;
  // std::sort with a total order (names are unique) rather than std::stable_sort: libstdc++'s
  // stable_sort temporary buffer trips ASan's alloc-dealloc-mismatch check under GCC 12.
  std::sort(infos.begin(), infos.end(), [](const TensorInfo& a, const TensorInfo& b) {
    if (a.offset != b.offset) return a.offset < b.offset;
    return a.nbytes != b.nbytes ? a.nbytes < b.nbytes : a.name < b.name;
  });
  // Sorted by start, a tensor overlaps an earlier one iff it starts before the furthest end so far.
  const TensorInfo* furthest = nullptr;  // the non-empty tensor that ends last so far
  for (const TensorInfo& t : infos) {
    if (t.nbytes == 0) continue;
    const uint64_t furthest_end = furthest ? furthest->offset + furthest->nbytes : 0;
    if (furthest && t.offset < furthest_end)
      return invalid_file("tensor bytes overlap those of tensor '", furthest->name, "'")
          .with_file(path)
          .with_tensor(t.name)
          .with_expected_found(str_cat("begin >= ", furthest_end - data_start),
                               str_cat("begin = ", t.offset - data_start));
    if (!furthest || t.offset + t.nbytes > furthest_end) furthest = &t;
  }
  for (size_t i = 0; i < infos.size(); ++i) st->index_[infos[i].name] = i;
  st->bytes_ = std::move(bytes);
  return st;
}

const TensorInfo* SafetensorsFile::find(const std::string& name) const {
  auto it = index_.find(name);
  return it == index_.end() ? nullptr : &infos_[it->second];
}

Result<Tensor> SafetensorsFile::tensor(const std::string& name) const {
  const TensorInfo* info = find(name);
  if (!info) return not_found("no such tensor").with_file(path()).with_tensor(name);
  const uint8_t* p = bytes_.data + info->offset;
  const auto esize = uintptr_t(dtype_traits(info->dtype).block_bytes);
  if (reinterpret_cast<uintptr_t>(p) % esize == 0)
    return Tensor(const_cast<uint8_t*>(p), info->dtype, info->shape, Device::kCPU, bytes_.owner);
  log_debug("safetensors: tensor '", name, "' in ", path(), " is not aligned to its element size; copying it");
  Tensor t = Tensor::empty(info->dtype, info->shape);
  if (info->nbytes) std::memcpy(t.data(), p, size_t(info->nbytes));
  return t;
}

// ---------------------------------------------------------------- writer

Status write_safetensors(const std::string& path, const std::vector<std::pair<std::string, Tensor>>& tensors,
                         const std::map<std::string, std::string>& metadata) {
  std::vector<size_t> order(tensors.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  // Widest element first keeps every tensor aligned to its element size; ties keep input order
  // (a total order, so std::sort is deterministic; see the reader for why not stable_sort).
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    const auto ea = dtype_traits(tensors[a].second.dtype()).block_bytes;
    const auto eb = dtype_traits(tensors[b].second.dtype()).block_bytes;
    return ea != eb ? ea > eb : a < b;
  });

  nlohmann::ordered_json header = nlohmann::ordered_json::object();
  if (!metadata.empty()) header["__metadata__"] = metadata;
  uint64_t offset = 0;
  for (size_t i : order) {
    const auto& [name, t] = tensors[i];
    if (header.contains(name)) return invalid_argument("duplicate tensor name").with_file(path).with_tensor(name);
    auto dname = safetensors_dtype_name(t.dtype());
    if (!dname)
      return unsupported("safetensors cannot hold dtype ", dtype_name(t.dtype())).with_file(path).with_tensor(name);
    if (t.device() != Device::kCPU || !t.is_contiguous() || !t.defined())
      return invalid_argument("only defined, contiguous CPU tensors can be written").with_file(path).with_tensor(name);
    const uint64_t n = uint64_t(t.nbytes());
    header[name] = {
        {"dtype", std::string(*dname)}, {"shape", t.shape().to_vector()}, {"data_offsets", {offset, offset + n}}};
    offset += n;
  }
  std::string text;
  try {
    text = header.dump();
  } catch (const nlohmann::json::exception&) {  // names and metadata must be valid UTF-8
    return invalid_argument("a tensor name or metadata entry is not valid UTF-8").with_file(path);
  }
  text.append((8 - text.size() % 8) % 8, ' ');  // data section starts 8-byte aligned

  return write_output_file(path, [&](std::FILE* f) -> Status {
    const uint64_t len = text.size();
    bool ok = std::fwrite(&len, 8, 1, f) == 1 && std::fwrite(text.data(), 1, text.size(), f) == text.size();
    for (size_t i : order) {
      const Tensor& t = tensors[i].second;
      const size_t n = size_t(t.nbytes());
      if (ok && n) ok = std::fwrite(t.data(), 1, n, f) == n;
    }
    return ok ? Status::ok() : io_error("cannot write: ", std::strerror(errno));
  });
}

}  // namespace quill
