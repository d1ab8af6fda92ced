// Tensor views: shape, strides, dtype and device over memory that someone else owns (a memory
// map, an arena, a std::vector). Views never copy; `owner` keeps the backing storage alive.
#pragma once

#include <array>
#include <cstdint>
#include <initializer_list>
#include <memory>
#include <string>
#include <vector>

#include "quill/dtype.h"
#include "quill/status.h"

namespace quill {

enum class Device : uint8_t { kCPU = 0, kCUDA = 1 };
const char* device_name(Device d);

inline constexpr int kMaxRank = 8;

class Shape {
 public:
  Shape() = default;
  Shape(std::initializer_list<int64_t> dims);
  explicit Shape(const std::vector<int64_t>& dims);

  int rank() const { return rank_; }
  int64_t operator[](int i) const { return dims_[size_t(i)]; }
  int64_t& operator[](int i) { return dims_[size_t(i)]; }
  // Element count; 1 for rank 0. Callers that read untrusted shapes use checked_numel.
  int64_t numel() const;
  // nullopt-like -1 when a dimension is negative or the product overflows int64.
  int64_t checked_numel() const;
  std::vector<int64_t> to_vector() const { return {dims_.begin(), dims_.begin() + rank_}; }
  std::string to_string() const;  // "[2, 3, 4]"
  bool operator==(const Shape& o) const;
  bool operator!=(const Shape& o) const { return !(*this == o); }

 private:
  std::array<int64_t, kMaxRank> dims_{};
  int rank_ = 0;
};

class Tensor {
 public:
  Tensor() = default;
  // A contiguous view. `owner` may be null when the caller guarantees lifetime.
  Tensor(void* data, DType dtype, Shape shape, Device device = Device::kCPU,
         std::shared_ptr<const void> owner = nullptr);

  // Allocate an owned, zero-initialised, 64-byte aligned contiguous CPU tensor.
  static Tensor empty(DType dtype, Shape shape);

  bool defined() const { return data_ != nullptr || shape_.numel() == 0; }
  void* data() const { return data_; }
  template <typename T>
  T* data_as() const {
    return static_cast<T*>(data_);
  }
  DType dtype() const { return dtype_; }
  const Shape& shape() const { return shape_; }
  int rank() const { return shape_.rank(); }
  int64_t dim(int i) const { return shape_[i < 0 ? i + shape_.rank() : i]; }
  int64_t numel() const { return shape_.numel(); }
  // Strides in elements (block types: only contiguous views exist; strides count elements too).
  int64_t stride(int i) const { return strides_[size_t(i < 0 ? i + shape_.rank() : i)]; }
  Device device() const { return device_; }
  const std::shared_ptr<const void>& owner() const { return owner_; }
  // Row-scaled formats (fp8 e4m3 weights): one f32 scale per row, value = element x scale[row].
  // Null for every other tensor. Views made from this tensor keep it.
  const float* row_scale() const { return row_scale_ ? row_scale_->data() : nullptr; }
  Tensor with_row_scale(std::shared_ptr<const std::vector<float>> scale) const {
    Tensor t = *this;
    t.row_scale_ = std::move(scale);
    return t;
  }
  bool is_contiguous() const;
  int64_t nbytes() const;  // bytes of a contiguous tensor of this shape and dtype

  // Views (no copies).
  Tensor reshape(Shape shape) const;                        // contiguous only; numel must match
  Tensor slice(int dim, int64_t begin, int64_t end) const;  // scalar dtypes only
  Tensor with_strides(const std::array<int64_t, kMaxRank>& strides) const;

  // Element-wise read as float of a scalar float tensor (any strides); for tests and tools.
  std::vector<float> to_f32_vector() const;
  std::string describe() const;  // "f32[2, 3] cpu"

 private:
  void* data_ = nullptr;
  DType dtype_ = DType::kF32;
  Shape shape_;
  std::array<int64_t, kMaxRank> strides_{};
  Device device_ = Device::kCPU;
  std::shared_ptr<const void> owner_;
  std::shared_ptr<const std::vector<float>> row_scale_;
};

// Check a tensor's dtype and shape; the error names the tensor and both shapes.
Status expect_shape(const Tensor& t, const std::string& name, const Shape& expected);
Status expect_dtype(const Tensor& t, const std::string& name, DType expected);
// Index of the first NaN or Inf among n floats; -1 when all are finite.
int64_t first_non_finite(const float* p, int64_t n);

}  // namespace quill
