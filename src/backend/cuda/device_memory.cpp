#include "backend/cuda/device_memory.h"

namespace quill::cuda {

Status cuda_status(cudaError_t e, const char* what) {
  return make_error(ErrorCode::kDevice, "CUDA error while ", what, ": ", cudaGetErrorName(e), " (",
                    cudaGetErrorString(e), ")");
}

Status DeviceBuffer::reserve(size_t bytes, size_t granularity) {
  if (bytes <= bytes_) return Status::ok();
  release();
  const size_t rounded = (bytes + granularity - 1) & ~(granularity - 1);
  void* p = nullptr;
  const cudaError_t e = cudaMalloc(&p, rounded);
  if (e != cudaSuccess) {
    (void)cudaGetLastError();  // an allocation failure is not sticky; clear it
    return cuda_status(e, str_cat("allocating ", rounded, " bytes of device memory").c_str());
  }
  ptr_ = p;
  bytes_ = rounded;
  return Status::ok();
}

void DeviceBuffer::release() {
  if (ptr_) cudaFree(ptr_);
  ptr_ = nullptr;
  bytes_ = 0;
}

Status PinnedBuffer::reserve(size_t bytes) {
  if (bytes <= bytes_) return Status::ok();
  release();
  const size_t rounded = (bytes + (size_t(1) << 20) - 1) & ~((size_t(1) << 20) - 1);
  void* p = nullptr;
  const cudaError_t e = cudaMallocHost(&p, rounded);
  if (e != cudaSuccess) {
    (void)cudaGetLastError();
    return cuda_status(e, str_cat("allocating ", rounded, " bytes of pinned host memory").c_str());
  }
  ptr_ = p;
  bytes_ = rounded;
  return Status::ok();
}

void PinnedBuffer::release() {
  if (ptr_) cudaFreeHost(ptr_);
  ptr_ = nullptr;
  bytes_ = 0;
}

}  // namespace quill::cuda
