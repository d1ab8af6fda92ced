// Dense linear through cuBLASLt: y[M, N] (f32) = x[M, K] (bf16) . W[N, K]^T (bf16), f32 accumulate.
// One handle and one workspace per backend; the matmul descriptor, layouts and the heuristic's
// algorithm are cached per (M, N, K) so a repeated shape costs only the cublasLtMatmul call.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>
#include <map>
#include <memory>
#include <tuple>

#include "backend/cuda/device_memory.h"

namespace quill::cuda {

class LtGemm {
 public:
  static Result<std::unique_ptr<LtGemm>> create();
  ~LtGemm();
  LtGemm(const LtGemm&) = delete;
  LtGemm& operator=(const LtGemm&) = delete;

  // Device pointers; enqueued on `stream`, not synchronised.
  Status bf16_linear(const uint16_t* x, const uint16_t* w, float* y, int64_t M, int64_t N, int64_t K,
                     cudaStream_t stream);

 private:
  struct Plan;
  LtGemm() = default;
  Result<Plan*> plan(int64_t M, int64_t N, int64_t K);

  void* handle_ = nullptr;  // cublasLtHandle_t
  DeviceBuffer workspace_;
  std::map<std::tuple<int64_t, int64_t, int64_t>, std::unique_ptr<Plan>> plans_;
};

}  // namespace quill::cuda
