#include "quant/formats.h"

#include <array>
#include <cmath>
#include <cstring>

namespace quill::quant {

namespace {

Status check_k(const char* type, int64_t rows, int64_t K, int64_t block) {
  if (rows < 0 || K < 0) return invalid_argument(type, ": negative shape [", rows, ", ", K, "]");
  if (K % block != 0)
    return invalid_argument(type, ": the row length K = ", K, " is not a multiple of the block size ", block);
  return Status::ok();
}

}  // namespace

Status quantize_tq2_0_g128(const float* w, int64_t rows, int64_t K, void* out) {
  QUILL_RETURN_IF_ERROR(check_k("tq2_0_g128", rows, K, kTq2BlockSize));
  auto* blocks = static_cast<BlockTq2*>(out);
  const int64_t nb = rows * (K / kTq2BlockSize);
  for (int64_t b = 0; b < nb; ++b) {
    const float* x = w + b * kTq2BlockSize;
    double sum = 0.0;
    for (int j = 0; j < kTq2BlockSize; ++j) sum += std::fabs(x[j]);
    const float d = float(sum / double(kTq2BlockSize));  // BitNet b1.58 absmean
    BlockTq2& blk = blocks[b];
    std::memset(blk.qs, 0, sizeof(blk.qs));
    for (int j = 0; j < kTq2BlockSize; ++j) {
      int v = 0;
      if (d > 0.0f) {
        const float r = std::nearbyint(x[j] / d);  // half to even, like torch.round
        v = r < -1.0f ? -1 : (r > 1.0f ? 1 : int(r));
      }
      blk.qs[j / kTq2CodesPerByte] |= uint8_t(tq2_code_for(v) << (kTq2CodeBits * (j % kTq2CodesPerByte)));
    }
    blk.d = f32_to_f16(d);
  }
  return Status::ok();
}

Status dequantize_tq2_0_g128(const void* in, int64_t rows, int64_t K, float* out) {
  QUILL_RETURN_IF_ERROR(check_k("tq2_0_g128", rows, K, kTq2BlockSize));
  const auto* blocks = static_cast<const BlockTq2*>(in);
  const int64_t nb = rows * (K / kTq2BlockSize);
  for (int64_t b = 0; b < nb; ++b) {
    const float d = f16_to_f32(blocks[b].d);
    for (int j = 0; j < kTq2BlockSize; ++j)
      out[b * kTq2BlockSize + j] = float(tq2_code_value(tq2_code(blocks[b].qs, j))) * d;
  }
  return Status::ok();
}

Status quantize_q8_0(const float* w, int64_t rows, int64_t K, void* out) {
  QUILL_RETURN_IF_ERROR(check_k("q8_0", rows, K, kQ8BlockSize));
  auto* blocks = static_cast<BlockQ8_0*>(out);
  const int64_t nb = rows * (K / kQ8BlockSize);
  for (int64_t b = 0; b < nb; ++b) {
    const float* x = w + b * kQ8BlockSize;
    float amax = 0.0f;
    for (int j = 0; j < kQ8BlockSize; ++j) amax = std::fmax(amax, std::fabs(x[j]));
    const float d = amax / 127.0f;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    for (int j = 0; j < kQ8BlockSize; ++j) blocks[b].qs[j] = int8_t(std::round(x[j] * id));  // as ggml
    blocks[b].d = f32_to_f16(d);
  }
  return Status::ok();
}

Status dequantize_q8_0(const void* in, int64_t rows, int64_t K, float* out) {
  QUILL_RETURN_IF_ERROR(check_k("q8_0", rows, K, kQ8BlockSize));
  const auto* blocks = static_cast<const BlockQ8_0*>(in);
  const int64_t nb = rows * (K / kQ8BlockSize);
  for (int64_t b = 0; b < nb; ++b) {
    const float d = f16_to_f32(blocks[b].d);
    for (int j = 0; j < kQ8BlockSize; ++j) out[b * kQ8BlockSize + j] = float(blocks[b].qs[j]) * d;
  }
  return Status::ok();
}

Status quantize_fp8_e4m3_rows(const float* w, int64_t rows, int64_t K, uint8_t* out, float* scales) {
  QUILL_RETURN_IF_ERROR(check_k("fp8_e4m3", rows, K, 1));
  for (int64_t r = 0; r < rows; ++r) {
    const float* x = w + r * K;
    float amax = 0.0f;
    for (int64_t k = 0; k < K; ++k) amax = std::fmax(amax, std::fabs(x[k]));
    const float s = amax / kFp8E4M3Max;
    scales[r] = s;
    for (int64_t k = 0; k < K; ++k) out[r * K + k] = s > 0.0f ? f32_to_f8e4m3(x[k] / s) : uint8_t(0);
  }
  return Status::ok();
}

Status dequantize_fp8_e4m3_rows(const uint8_t* in, const float* scales, int64_t rows, int64_t K, float* out) {
  QUILL_RETURN_IF_ERROR(check_k("fp8_e4m3", rows, K, 1));
  // Every code's value, once: a table load instead of the bit decode per weight (the exact panel
  // kernels decode weights on every pass, so this is on the hot path of fp8 models).
  static const std::array<float, 256> kValue = [] {
    std::array<float, 256> t{};
    for (int c = 0; c < 256; ++c) t[size_t(c)] = f8e4m3_to_f32(uint8_t(c));
    return t;
  }();
  for (int64_t r = 0; r < rows; ++r) {
    const float s = scales[r];
    for (int64_t k = 0; k < K; ++k) out[r * K + k] = kValue[in[r * K + k]] * s;
  }
  return Status::ok();
}

Result<Tensor> quantize_tensor(const Tensor& w, DType dtype) {
  if (w.rank() != 2 || w.dtype() != DType::kF32 || !w.is_contiguous())
    return invalid_argument("quantize_tensor: expected a contiguous 2-D f32 tensor, got ", w.describe());
  const int64_t N = w.dim(0), K = w.dim(1);
  const float* src = w.data_as<const float>();
  switch (dtype) {
    case DType::kTQ2_0_G128:
    case DType::kQ8_0: {
      const int64_t block = dtype == DType::kQ8_0 ? kQ8BlockSize : kTq2BlockSize;
      if (K % block != 0)
        return invalid_argument("quantize_tensor: ", dtype_name(dtype), " needs K to be a multiple of ", block,
                                ", got shape ", w.shape().to_string());
      Tensor out = Tensor::empty(dtype, Shape{N, K});
      if (dtype == DType::kQ8_0)
        QUILL_RETURN_IF_ERROR(quantize_q8_0(src, N, K, out.data()));
      else
        QUILL_RETURN_IF_ERROR(quantize_tq2_0_g128(src, N, K, out.data()));
      return out;
    }
    case DType::kF16:
    case DType::kBF16: {
      Tensor out = Tensor::empty(dtype, Shape{N, K});
      convert_from_f32(dtype, src, out.data(), N * K);
      return out;
    }
    default:
      return unsupported("quantize_tensor: no quantizer for ", dtype_name(dtype));
  }
}

Result<Tensor> dequantize_tensor(const Tensor& w) {
  if (w.rank() != 2 || !w.is_contiguous())
    return invalid_argument("dequantize_tensor: expected a contiguous 2-D tensor, got ", w.describe());
  const int64_t N = w.dim(0), K = w.dim(1);
  Tensor out = Tensor::empty(DType::kF32, Shape{N, K});
  float* dst = out.data_as<float>();
  if (w.dtype() == DType::kTQ2_0_G128) {
    QUILL_RETURN_IF_ERROR(dequantize_tq2_0_g128(w.data(), N, K, dst));
  } else if (w.dtype() == DType::kQ8_0) {
    QUILL_RETURN_IF_ERROR(dequantize_q8_0(w.data(), N, K, dst));
  } else if (!convert_to_f32(w.dtype(), w.data(), dst, N * K)) {
    return unsupported("dequantize_tensor: cannot dequantize ", dtype_name(w.dtype()));
  }
  return out;
}

}  // namespace quill::quant
