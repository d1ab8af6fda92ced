#include "runtime/device_select.h"

#include <iterator>

#include "core/log.h"
#include "runtime/gpu_backend.h"

namespace quill {

Result<DeviceChoice> parse_device_choice(std::string_view name) {
  for (auto c : {DeviceChoice::kAuto, DeviceChoice::kCpu, DeviceChoice::kGpu})
    if (name == device_choice_name(c)) return c;
  return invalid_argument("unknown device '", std::string(name), "' (expected auto, cpu or gpu)");
}

const char* device_choice_name(DeviceChoice choice) {
  static constexpr const char* kNames[] = {"auto", "cpu", "gpu"};  // in DeviceChoice's order
  return size_t(choice) < std::size(kNames) ? kNames[size_t(choice)] : "?";
}

Result<DeviceSelection> select_device(DeviceChoice choice) {
  DeviceSelection sel;
  sel.description = "cpu";
  if (choice == DeviceChoice::kCpu) return sel;
  auto gpu = create_gpu_backend();
  if (gpu.is_ok()) {
    sel.gpu = std::shared_ptr<OpBackend>(std::move(gpu).value());
    sel.description = std::string(sel.gpu->name()) + " (per-op CPU fallback)";
    return sel;
  }
  if (choice == DeviceChoice::kGpu) return gpu.take_status().with_context("--device gpu");
  log_info("running on the CPU: ", gpu.status().to_string());
  sel.description = "cpu (" + gpu.status().message() + ")";
  return sel;
}

}  // namespace quill
