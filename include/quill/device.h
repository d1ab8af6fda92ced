// Where a model's ops run, chosen the same way for every model and every entry point (CLI, API,
// server): `auto` uses the GPU when this build has CUDA, a device exists and QUILL_GPU allows it,
// else the CPU; `gpu` requires the GPU (an error without one); `cpu` never touches it. On the GPU
// each op the GPU lacks or fails runs on the CPU (per-op fallback), so a forward never breaks.
#pragma once

#include <cstdint>
#include <string_view>

#include "quill/status.h"

namespace quill {

enum class DeviceChoice : uint8_t { kAuto = 0, kCpu, kGpu };

// "auto", "cpu" or "gpu" (case-sensitive); anything else is kInvalidArgument naming the choices.
Result<DeviceChoice> parse_device_choice(std::string_view name);
const char* device_choice_name(DeviceChoice choice);

}  // namespace quill
