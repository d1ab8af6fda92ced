// The contract between the `quill` binary and the CUDA backend module, libquill_cuda.so, which
// create_gpu_backend() loads with dlopen only when a GPU backend is asked for and the driver reports
// a device: a run without a GPU never loads the CUDA runtime or cuBLASLt.
//
// The module holds only src/backend/cuda; everything else it calls (Status, Tensor, logging) it
// takes from the executable, which exports quill_lib's symbols, so there is one copy of the code
// and of its global state. Binaries that link the CUDA backend in directly (quill_tests,
// quill_bench_cuda) define these functions themselves and load no module.
#pragma once

#include "runtime/op_backend.h"

// The file name, looked for next to the executable unless QUILL_CUDA_MODULE gives a path.
#define QUILL_CUDA_MODULE_FILE "libquill_cuda.so"

// C++ types cross this boundary, so module and binary must come from the same sources and compiler.
#define QUILL_CUDA_MODULE_ABI "quill " QUILL_VERSION " " __VERSION__

extern "C" {
// QUILL_CUDA_MODULE_ABI as the module was compiled; the loader refuses a module that differs.
const char* quill_cuda_module_abi();
// A CUDA backend on device 0 (the caller owns it), or null with *error saying why.
quill::OpBackend* quill_cuda_module_create(quill::Status* error);
}
