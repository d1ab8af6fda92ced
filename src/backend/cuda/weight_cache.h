// Weights resident on the GPU: each weight tensor is uploaded once, on first use, keyed by its
// host data pointer (weights are immutable views of a memory map or of the model's own storage
// for the model's lifetime, so the pointer names the weight), and kept for the backend's life.
// A freed model's address can be reused by the next model's weights, so a hit also checks dtype,
// shape and a fingerprint of 32 sampled 8-byte words; a caller that unloads a model should still
// call clear() (CudaBackend::clear_weights) to free the device memory and rule out stale hits.
//
// Formats are chosen for the kernels at upload:
//   f32 / f16 / bf16 [N, K] -> bf16 [N, K]  (cuBLASLt's operand; f32 is rounded to bf16 here,
//                                            which is the one precision change on the GPU path)
//   tq2_0_g128 [N, K]      -> codes + scales in the layout of tq2_layout.h (ternary kernel)
// Uploads go through the backend's pinned staging buffer in chunks on its stream.
#pragma once

#include <cstdint>
#include <memory>
#include <unordered_map>

#include "backend/cuda/device_memory.h"
#include "quill/tensor.h"

namespace quill::cuda {

struct DeviceWeight {
  enum class Format { kBf16, kTernary };
  Format format = Format::kBf16;
  DType source_dtype = DType::kF32;
  int64_t N = 0, K = 0;
  uint64_t fingerprint = 0;
  DeviceBuffer data;    // bf16 [N, K], or ternary codes
  DeviceBuffer scales;  // ternary: f16 [K/128][N]
  size_t bytes() const { return data.bytes() + scales.bytes(); }
};

class WeightCache {
 public:
  // Is this weight something the cache can hold (2-D, contiguous, f32/f16/bf16, or tq2 with K % 128 == 0)?
  static bool can_hold(const Tensor& W);

  // The resident copy of W (uploaded now if needed). `staging` is pinned host memory for the copies.
  Result<const DeviceWeight*> get(const Tensor& W, cudaStream_t stream, PinnedBuffer& staging);

  size_t resident_bytes() const { return resident_bytes_; }
  int64_t uploads() const { return uploads_; }
  size_t size() const { return weights_.size(); }
  void clear();
  static uint64_t fingerprint(const Tensor& W);

 private:
  Result<std::unique_ptr<DeviceWeight>> upload(const Tensor& W, cudaStream_t stream, PinnedBuffer& staging);

  std::unordered_map<const void*, std::unique_ptr<DeviceWeight>> weights_;
  DeviceBuffer convert_tmp_;  // f32 / f16 source bytes on the device before conversion to bf16
  size_t resident_bytes_ = 0;
  int64_t uploads_ = 0;
};

// Copy `bytes` from host to device through pinned `staging` (chunked, synchronous on `stream`).
Status upload_through(const void* host, void* device, size_t bytes, cudaStream_t stream, PinnedBuffer& staging);

}  // namespace quill::cuda
