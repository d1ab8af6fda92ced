// The CUDA module's entry points (runtime/gpu_module.h).
#include "backend/cuda/cuda_backend.h"
#include "runtime/gpu_module.h"

extern "C" const char* quill_cuda_module_abi() { return QUILL_CUDA_MODULE_ABI; }

extern "C" quill::OpBackend* quill_cuda_module_create(quill::Status* error) {
  auto r = quill::cuda::CudaBackend::create();
  if (!r.is_ok()) {
    *error = r.status();
    return nullptr;
  }
  return std::move(r).value().release();
}
