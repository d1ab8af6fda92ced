// The few-rows linear driver and the kernel lookup of one ISA, shared by linear_avx2.cpp and
// linear_avx512.cpp. Included inside namespace quill::cpu::<isa>, after that ISA's
//   decode<T>(src, dst, n)                                 a row of T -> f32
//   gemv_tile<T, R, MG>(x, K, w0, row_bytes, bias, n, y, ldy)  R rows of W times MG (<= 4) rows of x
//   kGemvRows                                              R of the main loop over W
// for T = DType::kF32, kF16, kBF16.
#pragma once

namespace {

// Rows of x in groups of up to 4, inside the loop over W rows: a tile of W rows is read from
// memory once and re-used from L1 by every group.
template <DType T, int R>
inline void gemv_rows_tile(const float* x, int64_t M, int64_t K, const char* w0, int64_t row_bytes, const float* bias,
                           int64_t n, float* y, int64_t ldy) {
  for (int64_t m0 = 0; m0 < M; m0 += 4) {
    const float* xm = x + m0 * K;
    float* ym = y + m0 * ldy;
    switch (M - m0 < 4 ? M - m0 : 4) {
      case 1:
        gemv_tile<T, R, 1>(xm, K, w0, row_bytes, bias, n, ym, ldy);
        break;
      case 2:
        gemv_tile<T, R, 2>(xm, K, w0, row_bytes, bias, n, ym, ldy);
        break;
      case 3:
        gemv_tile<T, R, 3>(xm, K, w0, row_bytes, bias, n, ym, ldy);
        break;
      default:
        gemv_tile<T, R, 4>(xm, K, w0, row_bytes, bias, n, ym, ldy);
        break;
    }
  }
}

template <DType T>
void gemv(const float* x, int64_t M, int64_t K, const void* W, const float* bias, int64_t n0, int64_t n1, float* y,
          int64_t ldy) {
  const int64_t row_bytes = K * int64_t(T == DType::kF32 ? 4 : 2);
  const char* wb = static_cast<const char*>(W);
  int64_t n = n0;
  for (; n + kGemvRows <= n1; n += kGemvRows)
    gemv_rows_tile<T, kGemvRows>(x, M, K, wb + n * row_bytes, row_bytes, bias, n, y, ldy);
  for (; n < n1; ++n) gemv_rows_tile<T, 1>(x, M, K, wb + n * row_bytes, row_bytes, bias, n, y, ldy);
}

}  // namespace

LinearKernels linear_kernels(DType dtype) {
  switch (dtype) {
    case DType::kF32:
      return {nullptr, gemv<DType::kF32>};
    case DType::kF16:
      return {decode<DType::kF16>, gemv<DType::kF16>};
    case DType::kBF16:
      return {decode<DType::kBF16>, gemv<DType::kBF16>};
    default:
      return {};
  }
}
