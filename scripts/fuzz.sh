#!/usr/bin/env bash
# Builds the libFuzzer targets (clang, ASan + UBSan) with the `fuzz` preset and runs each for
# QUILL_FUZZ_SECONDS (default 60) through `ctest -L fuzz`. Crash inputs land in
# build/fuzz/fuzz/artifacts/; reproduce one with build/fuzz/fuzz/<target> <file>.
set -euo pipefail
cd "$(dirname "$0")/.."
JOBS=${JOBS:-$(nproc)}
SECONDS_EACH=${QUILL_FUZZ_SECONDS:-60}
cmake --preset fuzz -DQUILL_FUZZ_SECONDS="$SECONDS_EACH" >/dev/null
cmake --build --preset fuzz -j "$JOBS" --target quill_fuzz
# The targets share the machine: run them one after another unless FUZZ_JOBS says otherwise.
ctest --test-dir build/fuzz -L fuzz --output-on-failure -j "${FUZZ_JOBS:-1}" "$@"
