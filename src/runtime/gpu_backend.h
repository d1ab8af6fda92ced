// The accelerator backend for this build and machine, behind the OpBackend interface, so callers
// (the CLI, the server, tests) need not know whether CUDA was compiled in.
#pragma once

#include <memory>

#include "runtime/op_backend.h"

namespace quill {

// True when this build contains the CUDA backend.
bool gpu_backend_compiled();

// A GPU backend, or why there is none: built without CUDA, QUILL_GPU=0, no driver or device.
// Callers treat an error as "run on the CPU" (and may log it at info level).
Result<std::unique_ptr<OpBackend>> create_gpu_backend();

}  // namespace quill
