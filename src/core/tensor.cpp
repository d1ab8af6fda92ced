#include "quill/tensor.h"

#include <cmath>

#include <cassert>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <sstream>

namespace quill {

const char* device_name(Device d) { return d == Device::kCUDA ? "cuda" : "cpu"; }

Shape::Shape(std::initializer_list<int64_t> dims) {
  assert(dims.size() <= size_t(kMaxRank));
  for (int64_t d : dims) dims_[size_t(rank_++)] = d;
}

Shape::Shape(const std::vector<int64_t>& dims) {
  assert(dims.size() <= size_t(kMaxRank));
  for (int64_t d : dims) dims_[size_t(rank_++)] = d;
}

int64_t Shape::numel() const {
  int64_t n = 1;
  for (int i = 0; i < rank_; ++i) n *= dims_[size_t(i)];
  return n;
}

int64_t Shape::checked_numel() const {
  int64_t n = 1;
  for (int i = 0; i < rank_; ++i) {
    const int64_t d = dims_[size_t(i)];
    if (d < 0) return -1;
    if (d != 0 && n > std::numeric_limits<int64_t>::max() / d) return -1;
    n *= d;
  }
  return n;
}

std::string Shape::to_string() const {
  std::string s = "[";
  for (int i = 0; i < rank_; ++i) {
    if (i) s += ", ";
    s += std::to_string(dims_[size_t(i)]);
  }
  return s + "]";
}

bool Shape::operator==(const Shape& o) const {
  if (rank_ != o.rank_) return false;
  for (int i = 0; i < rank_; ++i)
    if (dims_[size_t(i)] != o.dims_[size_t(i)]) return false;
  return true;
}

static void contiguous_strides(const Shape& s, std::array<int64_t, kMaxRank>& st) {
  int64_t acc = 1;
  for (int i = s.rank() - 1; i >= 0; --i) {
    st[size_t(i)] = acc;
    acc *= s[i];
  }
}

Tensor::Tensor(void* data, DType dtype, Shape shape, Device device, std::shared_ptr<const void> owner)
    : data_(data), dtype_(dtype), shape_(shape), device_(device), owner_(std::move(owner)) {
  contiguous_strides(shape_, strides_);
}

Tensor Tensor::empty(DType dtype, Shape shape) {
  const int64_t bytes = dtype_bytes_for(dtype, shape.numel()).value_or(0);
  const size_t alloc = size_t((bytes + 63) / 64 * 64 + 64);
  void* p = std::aligned_alloc(64, alloc);
  if (!p) throw std::bad_alloc();
  std::memset(p, 0, alloc);
  std::shared_ptr<void> owner(p, [](void* q) { std::free(q); });
  return Tensor(p, dtype, shape, Device::kCPU, std::move(owner));
}

bool Tensor::is_contiguous() const {
  std::array<int64_t, kMaxRank> st{};
  contiguous_strides(shape_, st);
  for (int i = 0; i < shape_.rank(); ++i)
    if (shape_[i] != 1 && st[size_t(i)] != strides_[size_t(i)]) return false;
  return true;
}

int64_t Tensor::nbytes() const { return dtype_bytes_for(dtype_, shape_.numel()).value_or(-1); }

Tensor Tensor::reshape(Shape shape) const {
  assert(is_contiguous() && shape.numel() == shape_.numel());
  Tensor t = *this;
  t.shape_ = shape;
  contiguous_strides(shape, t.strides_);
  return t;
}

Tensor Tensor::slice(int dim, int64_t begin, int64_t end) const {
  assert(!dtype_traits(dtype_).is_quantized);
  if (dim < 0) dim += rank();
  assert(0 <= begin && begin <= end && end <= shape_[dim]);
  Tensor t = *this;
  t.data_ = static_cast<char*>(data_) + begin * strides_[size_t(dim)] * dtype_traits(dtype_).block_bytes;
  t.shape_[dim] = end - begin;
  return t;
}

Tensor Tensor::with_strides(const std::array<int64_t, kMaxRank>& strides) const {
  Tensor t = *this;
  t.strides_ = strides;
  return t;
}

std::vector<float> Tensor::to_f32_vector() const {
  const int64_t n = numel();
  std::vector<float> out(static_cast<size_t>(n));
  if (n == 0) return out;
  const int64_t esize = dtype_traits(dtype_).block_bytes;
  std::vector<int64_t> idx(static_cast<size_t>(rank()), 0);
  for (int64_t i = 0; i < n; ++i) {
    int64_t off = 0;
    for (int d = 0; d < rank(); ++d) off += idx[size_t(d)] * strides_[size_t(d)];
    const char* p = static_cast<const char*>(data_) + off * esize;
    if (!convert_to_f32(dtype_, p, &out[size_t(i)], 1)) {
      if (dtype_ == DType::kI32) {
        int32_t v;
        std::memcpy(&v, p, 4);
        out[size_t(i)] = float(v);
      } else if (dtype_ == DType::kI64) {
        int64_t v;
        std::memcpy(&v, p, 8);
        out[size_t(i)] = float(v);
      } else if (dtype_ == DType::kI8)
        out[size_t(i)] = float(*reinterpret_cast<const int8_t*>(p));
      else if (dtype_ == DType::kU8 || dtype_ == DType::kBool)
        out[size_t(i)] = float(*reinterpret_cast<const uint8_t*>(p));
      else
        out[size_t(i)] = 0.0f;
    }
    for (int d = rank() - 1; d >= 0; --d) {
      if (++idx[size_t(d)] < shape_[d]) break;
      idx[size_t(d)] = 0;
    }
  }
  return out;
}

std::string Tensor::describe() const {
  return std::string(dtype_name(dtype_)) + shape_.to_string() + " " + device_name(device_);
}

Status expect_shape(const Tensor& t, const std::string& name, const Shape& expected) {
  if (t.shape() == expected) return Status::ok();
  return invalid_argument("shape mismatch")
      .with_tensor(name)
      .with_expected_found(expected.to_string(), t.shape().to_string());
}

Status expect_dtype(const Tensor& t, const std::string& name, DType expected) {
  if (t.dtype() == expected) return Status::ok();
  return invalid_argument("dtype mismatch")
      .with_tensor(name)
      .with_expected_found(dtype_name(expected), dtype_name(t.dtype()));
}

int64_t first_non_finite(const float* p, int64_t n) {
  for (int64_t i = 0; i < n; ++i)
    if (!std::isfinite(p[i])) return i;
  return -1;
}

}  // namespace quill
