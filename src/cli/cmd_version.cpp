// `quill version`: version and build features, for bug reports.
#include <cstdio>

#include "backend/cpu/blas_core.h"
#include "cli/command.h"
#include "core/cpu_features.h"

namespace quill::cli {
namespace {

Runner setup(CLI::App& sub) {
  return [] {
    std::printf("quill %s\n", QUILL_VERSION);
    std::printf("features:");
#ifdef QUILL_HAVE_OPENBLAS
    std::printf(" openblas");
#endif
#ifdef QUILL_HAVE_DNNL
    std::printf(" onednn");
#endif
#ifdef QUILL_HAVE_IMAGE
    std::printf(" png jpeg");
#endif
#ifdef QUILL_HAVE_TEXT
    std::printf(" freetype harfbuzz");
#endif
#ifdef QUILL_HAVE_CUDA
    std::printf(" cuda");
#endif
    std::printf("\ncpu: %s\n", cpu_features_string().c_str());
#ifdef QUILL_HAVE_OPENBLAS
    const std::string sw = cpu::blas_core_switch();
    std::printf("openblas core: %s%s\n", cpu::blas_core_name().c_str(), sw.empty() ? "" : (" (" + sw + ")").c_str());
#endif
    return kExitOk;
  };
}

}  // namespace
QUILL_COMMAND(version, "version", "Print the version, compiled-in features and the CPU's ISA", setup);
}  // namespace quill::cli
