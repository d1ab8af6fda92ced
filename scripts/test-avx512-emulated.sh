#!/usr/bin/env bash
# Builds Quill with its AVX-512 kernels emulated through SIMDe on AVX2 (the avx512-emulated preset,
# src/core/avx512_intrinsics.h) and runs the fast test suite on it, so every change to those
# kernels is checked on machines without AVX-512 too (CI's are often AVX2-only). Speed means nothing
# in this build; it checks results only. AMX is never emulated. CI runs it after scripts/test.sh.
#
#   bash scripts/test-avx512-emulated.sh            # the fast suite but the Python package (~1 min once built)
#   bash scripts/test-avx512-emulated.sh -R Quant   # other ctest arguments instead
#
# Skips (exit 0, with a message) on CPUs that run AVX-512 natively (the release build's tests
# already run those kernels there) or lack AVX2.
set -euo pipefail
cd "$(dirname "$0")/.."

if ! grep -qw avx2 /proc/cpuinfo; then
  echo "test-avx512-emulated: this CPU has no AVX2, which the emulation is built on; skipped"
  exit 0
fi
if grep -qw avx512f /proc/cpuinfo && [ -z "${QUILL_EMULATE_ANYWAY:-}" ]; then
  echo "test-avx512-emulated: this CPU has AVX-512: the release build's tests run those kernels natively; skipped"
  echo "  (QUILL_EMULATE_ANYWAY=1 runs the emulated build regardless)"
  exit 0
fi

JOBS=${JOBS:-$(nproc)}
cmake --preset avx512-emulated >/dev/null
cmake --build --preset avx512-emulated -j "$JOBS"

cd build/avx512-emulated
# The suite must dispatch to the emulated AVX-512 kernels, or it checks nothing the release build doesn't.
if ! ./tests/quill_tests --gtest_filter='CpuFeatures.EmulatedBuildDispatchesToAvx512' | grep -q '^\[       OK \]'; then
  echo "test-avx512-emulated: the build does not dispatch to the emulated AVX-512 kernels" >&2
  exit 1
fi
if [ $# -eq 0 ]; then
  # Not the Python package's tests: its extension is the native build `pip install .` made
  # (scripts/setup-python.sh), so they would compare the AVX2 kernels with this build's CLI.
  ctest --output-on-failure -j "$JOBS" -LE "fuzz|slow" -E "^Python\."
else
  ctest --output-on-failure -j "$JOBS" "$@"
fi
