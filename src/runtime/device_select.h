// The one place a device choice (include/quill/device.h) becomes backends: every engine of a
// request (transformer, VAE, style encoder) shares the selected GPU backend as its primary.
#pragma once

#include <memory>
#include <string>

#include "quill/device.h"
#include "runtime/op_backend.h"

namespace quill {

struct DeviceSelection {
  std::shared_ptr<OpBackend> gpu;  // null: everything on the CPU
  std::string description;         // "cuda (per-op CPU fallback)", "cpu", "cpu (no CUDA device ...)"
};

// auto: the GPU when there is one, else the CPU (why is in `description` and logged at info);
// gpu: an error saying why there is none; cpu: the CPU.
Result<DeviceSelection> select_device(DeviceChoice choice);

}  // namespace quill
