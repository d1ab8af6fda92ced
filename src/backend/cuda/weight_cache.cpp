#include "backend/cuda/weight_cache.h"

#include <algorithm>
#include <cstring>
#include <vector>

#include "backend/cuda/kernels.h"
#include "backend/cuda/tq2_layout.h"

namespace quill::cuda {

namespace {
constexpr size_t kChunkBytes = size_t(64) << 20;
constexpr size_t kWeightGranularity = 256;
}  // namespace

Status upload_through(const void* host, void* device, size_t bytes, cudaStream_t stream, PinnedBuffer& staging) {
  if (bytes == 0) return Status::ok();
  QUILL_RETURN_IF_ERROR(staging.reserve(std::min(bytes, kChunkBytes)));
  const size_t chunk = std::min(staging.bytes(), kChunkBytes);
  const auto* src = static_cast<const unsigned char*>(host);
  auto* dst = static_cast<unsigned char*>(device);
  for (size_t off = 0; off < bytes; off += chunk) {
    const size_t n = std::min(chunk, bytes - off);
    std::memcpy(staging.data(), src + off, n);
    QUILL_CUDA_TRY(cudaMemcpyAsync(dst + off, staging.data(), n, cudaMemcpyHostToDevice, stream), "uploading a weight");
    // The staging buffer is reused by the next chunk.
    QUILL_CUDA_TRY(cudaStreamSynchronize(stream), "uploading a weight");
  }
  return Status::ok();
}

bool WeightCache::can_hold(const Tensor& W) {
  if (W.rank() != 2 || !W.is_contiguous() || W.data() == nullptr || W.device() != Device::kCPU) return false;
  switch (W.dtype()) {
    case DType::kF32:
    case DType::kF16:
    case DType::kBF16:
      return true;
    case DType::kTQ2_0_G128:
      return W.dim(1) % kTq2Group == 0;
    default:
      return false;
  }
}

uint64_t WeightCache::fingerprint(const Tensor& W) {
  const auto* p = static_cast<const unsigned char*>(W.data());
  const int64_t bytes = W.nbytes();
  uint64_t h = 14695981039346656037ull ^ uint64_t(bytes);  // FNV-1a over 32 sampled words
  constexpr int kSamples = 32;
  for (int i = 0; i < kSamples && bytes >= 8; ++i) {
    uint64_t word;
    std::memcpy(&word, p + (bytes - 8) * i / (kSamples - 1), 8);
    for (int b = 0; b < 8; ++b) h = (h ^ ((word >> (8 * b)) & 0xFF)) * 1099511628211ull;
  }
  return h;
}

Result<const DeviceWeight*> WeightCache::get(const Tensor& W, cudaStream_t stream, PinnedBuffer& staging) {
  auto it = weights_.find(W.data());
  if (it != weights_.end()) {
    const DeviceWeight& w = *it->second;
    if (w.source_dtype == W.dtype() && w.N == W.dim(0) && w.K == W.dim(1) && w.fingerprint == fingerprint(W)) return &w;
    // Same address, different tensor: the old one is gone; replace it.
    resident_bytes_ -= w.bytes();
    weights_.erase(it);
  }
  QUILL_ASSIGN_OR_RETURN(auto w, upload(W, stream, staging));
  resident_bytes_ += w->bytes();
  ++uploads_;
  const DeviceWeight* raw = w.get();
  weights_.emplace(W.data(), std::move(w));
  return raw;
}

Result<std::unique_ptr<DeviceWeight>> WeightCache::upload(const Tensor& W, cudaStream_t stream, PinnedBuffer& staging) {
  if (!can_hold(W)) return unsupported("the CUDA backend cannot hold weight ", W.describe());
  auto w = std::make_unique<DeviceWeight>();
  w->source_dtype = W.dtype();
  w->N = W.dim(0);
  w->K = W.dim(1);
  w->fingerprint = fingerprint(W);
  const int64_t n = w->N * w->K;

  if (W.dtype() == DType::kTQ2_0_G128) {
    w->format = DeviceWeight::Format::kTernary;
    std::vector<uint8_t> codes(static_cast<size_t>(tq2_codes_bytes(w->N, w->K)));
    std::vector<uint16_t> scales(static_cast<size_t>(tq2_scales_count(w->N, w->K)));
    tq2_repack(static_cast<const uint8_t*>(W.data()), w->N, w->K, codes.data(), scales.data());
    QUILL_RETURN_IF_ERROR(w->data.reserve(codes.size(), kWeightGranularity));
    QUILL_RETURN_IF_ERROR(w->scales.reserve(scales.size() * sizeof(uint16_t), kWeightGranularity));
    QUILL_RETURN_IF_ERROR(upload_through(codes.data(), w->data.data(), codes.size(), stream, staging));
    QUILL_RETURN_IF_ERROR(
        upload_through(scales.data(), w->scales.data(), scales.size() * sizeof(uint16_t), stream, staging));
    return w;
  }

  QUILL_RETURN_IF_ERROR(w->data.reserve(size_t(n) * 2, kWeightGranularity));
  if (W.dtype() == DType::kBF16) {
    QUILL_RETURN_IF_ERROR(upload_through(W.data(), w->data.data(), size_t(n) * 2, stream, staging));
    return w;
  }
  const size_t src_bytes = size_t(n) * (W.dtype() == DType::kF32 ? 4 : 2);
  QUILL_RETURN_IF_ERROR(convert_tmp_.reserve(src_bytes));
  QUILL_RETURN_IF_ERROR(upload_through(W.data(), convert_tmp_.data(), src_bytes, stream, staging));
  const cudaError_t e = W.dtype() == DType::kF32
                            ? f32_to_bf16(convert_tmp_.as<float>(), w->data.as<uint16_t>(), n, stream)
                            : f16_to_bf16(convert_tmp_.as<uint16_t>(), w->data.as<uint16_t>(), n, stream);
  QUILL_CUDA_TRY(e, "converting a weight to bf16");
  QUILL_CUDA_TRY(cudaStreamSynchronize(stream), "converting a weight to bf16");
  return w;
}

void WeightCache::clear() {
  weights_.clear();
  convert_tmp_.release();
  resident_bytes_ = 0;
}

}  // namespace quill::cuda
