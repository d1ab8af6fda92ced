#include "backend/cuda/lt_gemm.h"

#include <cublasLt.h>

namespace quill::cuda {

namespace {

constexpr size_t kWorkspaceBytes = size_t(32) << 20;  // what cuBLAS recommends for Hopper

Status lt_status(cublasStatus_t s, const char* what) {
  return make_error(ErrorCode::kDevice, "cuBLASLt error while ", what, ": ", cublasLtGetStatusName(s), " (",
                    cublasLtGetStatusString(s), ")");
}
#define QUILL_LT_TRY(expr, what)                                                   \
  do {                                                                             \
    const cublasStatus_t quill_lt_s_ = (expr);                                     \
    if (quill_lt_s_ != CUBLAS_STATUS_SUCCESS) return lt_status(quill_lt_s_, what); \
  } while (0)

cublasLtHandle_t as_handle(void* h) { return static_cast<cublasLtHandle_t>(h); }

}  // namespace

// Row-major y[M, N] = x[M, K] . W[N, K]^T is, in cuBLAS's column-major terms, y^T (N x M, ld N) =
// op(A) . B with A = W seen as K x N (ld K) transposed, B = x seen as K x M (ld K).
struct LtGemm::Plan {
  cublasLtMatmulDesc_t desc = nullptr;
  cublasLtMatrixLayout_t a = nullptr, b = nullptr, c = nullptr;
  cublasLtMatmulAlgo_t algo{};
  ~Plan() {
    if (a) cublasLtMatrixLayoutDestroy(a);
    if (b) cublasLtMatrixLayoutDestroy(b);
    if (c) cublasLtMatrixLayoutDestroy(c);
    if (desc) cublasLtMatmulDescDestroy(desc);
  }
};

Result<std::unique_ptr<LtGemm>> LtGemm::create() {
  std::unique_ptr<LtGemm> g(new LtGemm());
  cublasLtHandle_t h = nullptr;
  QUILL_LT_TRY(cublasLtCreate(&h), "creating a cuBLASLt handle");
  g->handle_ = h;
  QUILL_RETURN_IF_ERROR(g->workspace_.reserve(kWorkspaceBytes));
  return g;
}

LtGemm::~LtGemm() {
  plans_.clear();
  if (handle_) cublasLtDestroy(as_handle(handle_));
}

Result<LtGemm::Plan*> LtGemm::plan(int64_t M, int64_t N, int64_t K) {
  const auto key = std::make_tuple(M, N, K);
  if (auto it = plans_.find(key); it != plans_.end()) return it->second.get();
  auto p = std::make_unique<Plan>();
  QUILL_LT_TRY(cublasLtMatmulDescCreate(&p->desc, CUBLAS_COMPUTE_32F, CUDA_R_32F), "creating a matmul descriptor");
  const cublasOperation_t ta = CUBLAS_OP_T, tb = CUBLAS_OP_N;
  QUILL_LT_TRY(cublasLtMatmulDescSetAttribute(p->desc, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof ta), "setting TRANSA");
  QUILL_LT_TRY(cublasLtMatmulDescSetAttribute(p->desc, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof tb), "setting TRANSB");
  QUILL_LT_TRY(cublasLtMatrixLayoutCreate(&p->a, CUDA_R_16BF, uint64_t(K), uint64_t(N), K), "creating layout A");
  QUILL_LT_TRY(cublasLtMatrixLayoutCreate(&p->b, CUDA_R_16BF, uint64_t(K), uint64_t(M), K), "creating layout B");
  QUILL_LT_TRY(cublasLtMatrixLayoutCreate(&p->c, CUDA_R_32F, uint64_t(N), uint64_t(M), N), "creating layout C");

  cublasLtMatmulPreference_t pref = nullptr;
  QUILL_LT_TRY(cublasLtMatmulPreferenceCreate(&pref), "creating a matmul preference");
  const uint64_t ws = workspace_.bytes();
  cublasStatus_t s =
      cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof ws);
  cublasLtMatmulHeuristicResult_t result{};
  int found = 0;
  if (s == CUBLAS_STATUS_SUCCESS)
    s = cublasLtMatmulAlgoGetHeuristic(as_handle(handle_), p->desc, p->a, p->b, p->c, p->c, pref, 1, &result, &found);
  cublasLtMatmulPreferenceDestroy(pref);
  if (s != CUBLAS_STATUS_SUCCESS) return lt_status(s, "choosing a matmul algorithm");
  if (found == 0) return make_error(ErrorCode::kDevice, "cuBLASLt has no bf16 algorithm for M=", M, " N=", N, " K=", K);
  p->algo = result.algo;
  Plan* raw = p.get();
  plans_.emplace(key, std::move(p));
  return raw;
}

Status LtGemm::bf16_linear(const uint16_t* x, const uint16_t* w, float* y, int64_t M, int64_t N, int64_t K,
                           cudaStream_t stream) {
  if (M == 0 || N == 0) return Status::ok();
  QUILL_ASSIGN_OR_RETURN(Plan * p, plan(M, N, K));
  const float alpha = 1.0f, beta = 0.0f;
  QUILL_LT_TRY(cublasLtMatmul(as_handle(handle_), p->desc, &alpha, w, p->a, x, p->b, &beta, y, p->c, y, p->c, &p->algo,
                              workspace_.data(), workspace_.bytes(), stream),
               "running a bf16 matmul");
  return Status::ok();
}

}  // namespace quill::cuda
