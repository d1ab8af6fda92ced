#include "runtime/gpu_backend.h"

#include "runtime/gpu_policy.h"

#ifdef QUILL_HAVE_CUDA
#include "backend/cuda/cuda_backend.h"
#endif

namespace quill {

bool gpu_backend_compiled() {
#ifdef QUILL_HAVE_CUDA
  return true;
#else
  return false;
#endif
}

Result<std::unique_ptr<OpBackend>> create_gpu_backend() {
  if (!gpu_policy().gpu) return unsupported("GPU ops are off (QUILL_GPU=0)");
#ifdef QUILL_HAVE_CUDA
  QUILL_ASSIGN_OR_RETURN(auto backend, cuda::CudaBackend::create());
  return std::unique_ptr<OpBackend>(std::move(backend));
#else
  return unsupported("this build of Quill has no GPU backend (configure with -DQUILL_CUDA=ON)");
#endif
}

}  // namespace quill
