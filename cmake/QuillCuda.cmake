# CUDA backend: compiled for Hopper (sm_90a), Ampere (sm_80) and PTX for later GPUs.
#
# The objects are compiled once and linked two ways:
#  - quill_cuda_module, libquill_cuda.so next to `quill`, which dlopens it only when a GPU backend is
#    asked for and the driver reports a device (src/runtime/gpu_backend.cpp): the CUDA runtime and
#    cuBLASLt are not loaded at start-up. Its quill_lib symbols come from `quill`, which exports them;
#  - quill_cuda (objects + CUDA libraries), linked straight into the CUDA tests and the GPU benchmark.
enable_language(CUDA)
find_package(CUDAToolkit REQUIRED)
file(GLOB_RECURSE QUILL_CUDA_SOURCES CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/src/backend/cuda/*.cu ${PROJECT_SOURCE_DIR}/src/backend/cuda/*.cpp)
if(QUILL_CUDA_SOURCES)
  add_library(quill_cuda_objects OBJECT ${QUILL_CUDA_SOURCES})
  set(QUILL_CUDA_GENCODE "-gencode=arch=compute_90a,code=sm_90a;-gencode=arch=compute_80,code=sm_80;-gencode=arch=compute_90,code=compute_90"
      CACHE STRING "nvcc -gencode flags")
  # QUILL_CUDA_GENCODE alone chooses the targets: CMake's CUDA_ARCHITECTURES (default: nvcc's
  # sm_75) would add a target our tensor-core kernels (sm_80+) cannot build for.
  set_target_properties(quill_cuda_objects PROPERTIES CUDA_STANDARD 17 CUDA_STANDARD_REQUIRED ON CUDA_ARCHITECTURES OFF)
  target_compile_options(quill_cuda_objects PRIVATE $<$<COMPILE_LANGUAGE:CUDA>:${QUILL_CUDA_GENCODE} --expt-relaxed-constexpr -lineinfo>)
  target_include_directories(quill_cuda_objects PRIVATE ${PROJECT_SOURCE_DIR}/src ${PROJECT_SOURCE_DIR}/include)
  # Usage requirements only (headers, definitions): nothing links an object library's dependencies
  # here, since the objects are taken by $<TARGET_OBJECTS>.
  target_link_libraries(quill_cuda_objects PRIVATE quill_lib CUDA::cudart CUDA::cublasLt)
  quill_warnings(quill_cuda_objects)
  target_compile_definitions(quill_lib PUBLIC QUILL_HAVE_CUDA=1)

  add_library(quill_cuda_module MODULE $<TARGET_OBJECTS:quill_cuda_objects>)
  # Next to `quill`, where create_gpu_backend() looks for it.
  set_target_properties(quill_cuda_module PROPERTIES OUTPUT_NAME quill_cuda LINKER_LANGUAGE CXX
                        LIBRARY_OUTPUT_DIRECTORY ${PROJECT_BINARY_DIR})
  target_link_libraries(quill_cuda_module PRIVATE CUDA::cudart CUDA::cublasLt)

  add_library(quill_cuda INTERFACE)
  target_sources(quill_cuda INTERFACE $<TARGET_OBJECTS:quill_cuda_objects>)
  target_link_libraries(quill_cuda INTERFACE quill_lib CUDA::cudart CUDA::cublasLt)

  # GPU benchmark (plain CUDA events, no Google Benchmark needed): bench/cuda_bench.cpp.
  if(QUILL_BUILD_BENCH AND EXISTS ${PROJECT_SOURCE_DIR}/bench/cuda_bench.cpp)
    add_executable(quill_bench_cuda ${PROJECT_SOURCE_DIR}/bench/cuda_bench.cpp)
    target_link_libraries(quill_bench_cuda PRIVATE quill_cuda)
    target_include_directories(quill_bench_cuda PRIVATE ${PROJECT_SOURCE_DIR}/src)
    quill_warnings(quill_bench_cuda)
  endif()
endif()
