# CUDA backend: compiled for Hopper (sm_90a), Ampere (sm_80) and PTX for later GPUs.
enable_language(CUDA)
find_package(CUDAToolkit REQUIRED)
file(GLOB_RECURSE QUILL_CUDA_SOURCES CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/src/backend/cuda/*.cu ${PROJECT_SOURCE_DIR}/src/backend/cuda/*.cpp)
if(QUILL_CUDA_SOURCES)
  add_library(quill_cuda STATIC ${QUILL_CUDA_SOURCES})
  set(QUILL_CUDA_GENCODE "-gencode=arch=compute_90a,code=sm_90a;-gencode=arch=compute_80,code=sm_80;-gencode=arch=compute_90,code=compute_90"
      CACHE STRING "nvcc -gencode flags")
  # QUILL_CUDA_GENCODE alone chooses the targets: CMake's CUDA_ARCHITECTURES (default: nvcc's
  # sm_75) would add a target our tensor-core kernels (sm_80+) cannot build for.
  set_target_properties(quill_cuda PROPERTIES CUDA_STANDARD 17 CUDA_STANDARD_REQUIRED ON CUDA_ARCHITECTURES OFF)
  target_compile_options(quill_cuda PRIVATE $<$<COMPILE_LANGUAGE:CUDA>:${QUILL_CUDA_GENCODE} --expt-relaxed-constexpr -lineinfo>)
  target_include_directories(quill_cuda PRIVATE ${PROJECT_SOURCE_DIR}/src ${PROJECT_SOURCE_DIR}/include)
  target_link_libraries(quill_cuda PUBLIC CUDA::cudart CUDA::cublasLt quill_deps)
  target_compile_definitions(quill_cuda PUBLIC QUILL_HAVE_CUDA=1)
  quill_warnings(quill_cuda)
  # quill_lib calls into the backend and the backend uses quill_lib's core (Status, Tensor, log):
  # a cycle of static libraries, which CMake links by repeating them.
  target_link_libraries(quill_lib PUBLIC quill_cuda)
  target_link_libraries(quill_cuda PRIVATE quill_lib)

  # GPU benchmark (plain CUDA events, no Google Benchmark needed): bench/cuda_bench.cpp.
  if(QUILL_BUILD_BENCH AND EXISTS ${PROJECT_SOURCE_DIR}/bench/cuda_bench.cpp)
    add_executable(quill_bench_cuda ${PROJECT_SOURCE_DIR}/bench/cuda_bench.cpp)
    target_link_libraries(quill_bench_cuda PRIVATE quill_lib)
    target_include_directories(quill_bench_cuda PRIVATE ${PROJECT_SOURCE_DIR}/src)
    quill_warnings(quill_bench_cuda)
  endif()
endif()
