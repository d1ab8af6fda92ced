// Owned device and pinned host buffers (plain cudaMalloc / cudaMallocHost; never managed memory),
// and the conversion of CUDA errors into Quill Status values.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <utility>

#include "quill/status.h"

namespace quill::cuda {

// ErrorCode::kDevice with CUDA's own error name and text: "while <what>: cudaErrorX (text)".
Status cuda_status(cudaError_t e, const char* what);
#define QUILL_CUDA_TRY(expr, what)                                                            \
  do {                                                                                        \
    const cudaError_t quill_cuda_e_ = (expr);                                                 \
    if (quill_cuda_e_ != cudaSuccess) return ::quill::cuda::cuda_status(quill_cuda_e_, what); \
  } while (0)

// A device allocation that only grows (reserve keeps the old one when it is big enough).
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  ~DeviceBuffer() { release(); }
  DeviceBuffer(DeviceBuffer&& o) noexcept : ptr_(std::exchange(o.ptr_, nullptr)), bytes_(std::exchange(o.bytes_, 0)) {}
  DeviceBuffer& operator=(DeviceBuffer&& o) noexcept {
    if (this != &o) {
      release();
      ptr_ = std::exchange(o.ptr_, nullptr);
      bytes_ = std::exchange(o.bytes_, 0);
    }
    return *this;
  }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;

  // Contents are not kept when it grows. Sizes round up to `granularity` (a power of two): large
  // for scratch that grows with the shape, small for weights that never change size.
  Status reserve(size_t bytes, size_t granularity = size_t(2) << 20);
  void release();
  void* data() const { return ptr_; }
  template <typename T>
  T* as() const {
    return static_cast<T*>(ptr_);
  }
  size_t bytes() const { return bytes_; }

 private:
  void* ptr_ = nullptr;
  size_t bytes_ = 0;
};

// Page-locked host memory, so copies run at full PCIe / NVLink speed and can be asynchronous.
class PinnedBuffer {
 public:
  PinnedBuffer() = default;
  ~PinnedBuffer() { release(); }
  PinnedBuffer(const PinnedBuffer&) = delete;
  PinnedBuffer& operator=(const PinnedBuffer&) = delete;

  Status reserve(size_t bytes);
  void release();
  void* data() const { return ptr_; }
  template <typename T>
  T* as() const {
    return static_cast<T*>(ptr_);
  }
  size_t bytes() const { return bytes_; }

 private:
  void* ptr_ = nullptr;
  size_t bytes_ = 0;
};

}  // namespace quill::cuda
