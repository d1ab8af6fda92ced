// The AVX-512 intrinsics, for the *_avx512.cpp kernels and the headers only they use.
//
// Normally this is <immintrin.h> and those files are built with the AVX-512 flags. A build with
// -DQUILL_EMULATE_AVX512=ON (a test build: scripts/test-avx512-emulated.sh) builds them with the
// AVX2 flags instead and takes every _mm512_* from SIMDe (Debian's libsimde-dev), which computes
// them with AVX2, and cpu_hardware_isa() reports AVX-512: the AVX-512 kernels then run, and their
// tests check them, on CPUs without AVX-512. emulated_avx512_extras.h adds the few intrinsics
// SIMDe 0.7.4 lacks.
#pragma once

#if defined(QUILL_EMULATE_AVX512)
#define SIMDE_ENABLE_NATIVE_ALIASES
#include <simde/x86/avx512.h>

#include "core/emulated_avx512_extras.h"
#else
#include <immintrin.h>
#endif

// True where the AVX-512 code paths of a header are compiled: natively or emulated.
#if defined(__AVX512F__) || defined(QUILL_EMULATE_AVX512)
#define QUILL_AVX512_CODE 1
#endif
