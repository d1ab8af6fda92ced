#include "runtime/gpu_backend.h"

#include "runtime/gpu_policy.h"

#ifdef QUILL_HAVE_CUDA
#include <dlfcn.h>
#include <unistd.h>

#include <climits>
#include <cstdlib>
#include <cstring>
#include <string>

#include "runtime/gpu_module.h"

// Weak: defined when the CUDA backend is linked into this binary (tests, quill_bench_cuda), null
// in `quill`, which loads it from the module instead.
extern "C" [[gnu::weak]] quill::OpBackend* quill_cuda_module_create(quill::Status* error);
#endif

namespace quill {

#ifdef QUILL_HAVE_CUDA
namespace {

using CreateFn = OpBackend* (*)(Status*);

// Asks the driver (libcuda, small next to the CUDA runtime and cuBLASLt) whether there is a device,
// so a machine without one never loads the module. libcuda stays loaded when there is one: the CUDA
// runtime is about to load it anyway.
Status probe_cuda_device() {
  void* lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!lib) return make_error(ErrorCode::kDevice, "no CUDA driver (", dlerror(), "); the engine stays on the CPU");
  // The driver API's C signatures (cuda.h), so quill_lib needs no CUDA headers.
  using InitFn = int (*)(unsigned);
  using CountFn = int (*)(int*);
  using ErrorNameFn = int (*)(int, const char**);
  auto init = reinterpret_cast<InitFn>(dlsym(lib, "cuInit"));
  auto count = reinterpret_cast<CountFn>(dlsym(lib, "cuDeviceGetCount"));
  auto error_name = reinterpret_cast<ErrorNameFn>(dlsym(lib, "cuGetErrorName"));
  auto fail = [&](int code, const char* what) {
    const char* name = nullptr;
    if (error_name && error_name(code, &name) != 0) name = nullptr;
    Status s = name ? make_error(ErrorCode::kDevice, what, " (", name, "); the engine stays on the CPU")
                    : make_error(ErrorCode::kDevice, what, " (CUresult ", code, "); the engine stays on the CPU");
    dlclose(lib);
    return s;
  };
  if (!init || !count) {
    dlclose(lib);
    return make_error(ErrorCode::kDevice, "libcuda.so.1 lacks cuInit/cuDeviceGetCount; the engine stays on the CPU");
  }
  constexpr int kNoDevice = 100;  // CUDA_ERROR_NO_DEVICE
  int n = 0;
  if (const int e = init(0); e != 0) return fail(e, e == kNoDevice ? "no CUDA device found" : "the CUDA driver failed");
  if (const int e = count(&n); e != 0) return fail(e, "counting CUDA devices");
  if (n == 0) {
    dlclose(lib);
    return make_error(ErrorCode::kDevice, "no CUDA device found; the engine stays on the CPU");
  }
  return Status::ok();
}

// The module next to the executable, or dlopen's own search when that cannot be read.
std::string module_next_to_binary() {
  char exe[PATH_MAX];
  const ssize_t n = readlink("/proc/self/exe", exe, sizeof exe);
  if (n <= 0 || size_t(n) >= sizeof exe) return QUILL_CUDA_MODULE_FILE;
  const std::string path(exe, size_t(n));
  return path.substr(0, path.rfind('/') + 1) + QUILL_CUDA_MODULE_FILE;
}

Result<CreateFn> load_module() {
  QUILL_RETURN_IF_ERROR(probe_cuda_device());
  const char* env = std::getenv("QUILL_CUDA_MODULE");
  const bool from_env = env && *env;
  const std::string path = from_env ? env : module_next_to_binary();
  if (path.find('/') != std::string::npos && access(path.c_str(), F_OK) != 0)
    return make_error(ErrorCode::kDevice, QUILL_CUDA_MODULE_FILE " not found ",
                     from_env ? "where QUILL_CUDA_MODULE says: " : "next to the binary: ", path,
                     from_env ? "" : " (QUILL_CUDA_MODULE=<path> names another)", "; the engine stays on the CPU");
  // Never closed: backends it creates live in it, up to exit.
  void* lib = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!lib)
    return make_error(ErrorCode::kDevice, "loading the CUDA backend: ", dlerror(), "; the engine stays on the CPU");
  auto abi = reinterpret_cast<const char* (*)()>(dlsym(lib, "quill_cuda_module_abi"));
  auto create = reinterpret_cast<CreateFn>(dlsym(lib, "quill_cuda_module_create"));
  if (!abi || !create) return make_error(ErrorCode::kDevice, path, " is not a Quill CUDA module");
  if (std::strcmp(abi(), QUILL_CUDA_MODULE_ABI) != 0)
    return make_error(ErrorCode::kDevice, path, " was built for \"", abi(), "\", this binary is \"",
                      QUILL_CUDA_MODULE_ABI, "\"; rebuild them together");
  return create;
}

}  // namespace
#endif

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
  CreateFn create = quill_cuda_module_create;
  if (!create) {
    static const Result<CreateFn> loaded = load_module();
    if (!loaded.is_ok()) return loaded.status();
    create = loaded.value();
  }
  Status error;
  std::unique_ptr<OpBackend> backend(create(&error));
  if (!backend) return error.is_ok() ? internal_error("the CUDA module returned no backend and no error") : error;
  return backend;
#else
  return unsupported("this build of Quill has no GPU backend (configure with -DQUILL_CUDA=ON)");
#endif
}

}  // namespace quill
