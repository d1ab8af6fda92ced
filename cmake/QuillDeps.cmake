# Dependencies. Everything except nlohmann-json (header-only, needed to read configs) is optional,
# so a lean GPU build needs almost nothing; features turn off with a status line when missing.
find_package(Threads REQUIRED)
find_package(PkgConfig)
add_library(quill_deps INTERFACE)
target_link_libraries(quill_deps INTERFACE Threads::Threads)

find_package(nlohmann_json 3.10 REQUIRED)
target_link_libraries(quill_deps INTERFACE nlohmann_json::nlohmann_json)

# Dense CPU GEMM: OpenBLAS (sgemm, and sbgemm for bf16).
set(QUILL_HAVE_OPENBLAS OFF)
if(PkgConfig_FOUND)
  pkg_check_modules(OPENBLAS IMPORTED_TARGET openblas)
  if(OPENBLAS_FOUND)
    set(QUILL_HAVE_OPENBLAS ON)
    target_link_libraries(quill_deps INTERFACE PkgConfig::OPENBLAS)
    target_compile_definitions(quill_deps INTERFACE QUILL_HAVE_OPENBLAS=1)
  endif()
endif()
if(NOT QUILL_HAVE_OPENBLAS)
  message(STATUS "quill: OpenBLAS not found; dense f32 GEMM uses Quill's portable kernel")
endif()

# oneDNN: conv2d and GEMM baselines.
find_library(DNNL_LIBRARY dnnl)
find_path(DNNL_INCLUDE_DIR dnnl.hpp)
set(QUILL_HAVE_DNNL OFF)
if(DNNL_LIBRARY AND DNNL_INCLUDE_DIR)
  set(QUILL_HAVE_DNNL ON)
  target_link_libraries(quill_deps INTERFACE ${DNNL_LIBRARY})
  target_include_directories(quill_deps INTERFACE ${DNNL_INCLUDE_DIR})
  target_compile_definitions(quill_deps INTERFACE QUILL_HAVE_DNNL=1)
else()
  message(STATUS "quill: oneDNN not found; conv2d uses Quill's im2col + GEMM")
endif()

# Images: libpng (+ libjpeg-turbo).
set(QUILL_HAVE_IMAGE OFF)
find_package(PNG)
find_package(JPEG)
if(PNG_FOUND AND JPEG_FOUND)
  set(QUILL_HAVE_IMAGE ON)
  target_link_libraries(quill_deps INTERFACE PNG::PNG JPEG::JPEG)
  target_compile_definitions(quill_deps INTERFACE QUILL_HAVE_IMAGE=1)
else()
  message(STATUS "quill: libpng/libjpeg not found; image I/O disabled")
endif()

# HTTP server (`quill serve`): Debian's cpp-httplib is a compiled library; its pkg-config flags
# carry the TLS / compression defines its ABI was built with.
if(PkgConfig_FOUND)
  pkg_check_modules(HTTPLIB IMPORTED_TARGET cpp-httplib)
endif()
if(NOT HTTPLIB_FOUND)
  message(FATAL_ERROR "quill: cpp-httplib not found; run scripts/setup-debian.sh (libcpp-httplib-dev)")
endif()
target_link_libraries(quill_deps INTERFACE PkgConfig::HTTPLIB)

# Text: FreeType + HarfBuzz.
set(QUILL_HAVE_TEXT OFF)
find_package(Freetype)
if(PkgConfig_FOUND)
  pkg_check_modules(HARFBUZZ IMPORTED_TARGET harfbuzz)
endif()
if(FREETYPE_FOUND AND HARFBUZZ_FOUND)
  set(QUILL_HAVE_TEXT ON)
  target_link_libraries(quill_deps INTERFACE Freetype::Freetype PkgConfig::HARFBUZZ)
  target_compile_definitions(quill_deps INTERFACE QUILL_HAVE_TEXT=1)
else()
  message(STATUS "quill: FreeType/HarfBuzz not found; glyph-line rendering disabled")
endif()

# ICU: Unicode normalisation and the regex engine (with Unicode's real categories) the BPE
# tokenizers' pre-tokenizer patterns need.
find_package(ICU REQUIRED COMPONENTS uc i18n)
target_link_libraries(quill_deps INTERFACE ICU::uc ICU::i18n)

# CLI11 for the command line (header-only).
find_package(CLI11 CONFIG REQUIRED)
target_link_libraries(quill_deps INTERFACE CLI11::CLI11)

set(QUILL_HAVE_BENCHMARK OFF)
if(QUILL_BUILD_BENCH)
  find_package(benchmark)
  if(benchmark_FOUND)
    set(QUILL_HAVE_BENCHMARK ON)
  endif()
endif()

# CUDA: on when nvcc is found (AUTO), or forced.
set(QUILL_CUDA_ENABLED OFF)
if(QUILL_CUDA STREQUAL "ON" OR QUILL_CUDA STREQUAL "AUTO")
  include(CheckLanguage)
  if(NOT CMAKE_CUDA_COMPILER AND EXISTS /usr/local/cuda/bin/nvcc)
    set(CMAKE_CUDA_COMPILER /usr/local/cuda/bin/nvcc)
  endif()
  check_language(CUDA)
  if(CMAKE_CUDA_COMPILER)
    set(QUILL_CUDA_ENABLED ON)
  elseif(QUILL_CUDA STREQUAL "ON")
    message(FATAL_ERROR "QUILL_CUDA=ON but no CUDA compiler was found")
  endif()
endif()
message(STATUS "quill: openblas=${QUILL_HAVE_OPENBLAS} dnnl=${QUILL_HAVE_DNNL} image=${QUILL_HAVE_IMAGE} text=${QUILL_HAVE_TEXT} cuda=${QUILL_CUDA_ENABLED}")
