#!/usr/bin/env bash
# Sets up (Debian packages), builds and runs the whole fast test suite. This is the README's test
# command and what CI runs. Extra arguments go to ctest (e.g. -L fuzz, -R Safetensors).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup-debian.sh
bash scripts/setup-python-serve.sh || echo "test.sh: the service's Python test packages did not install; those tests will skip" >&2
# The Python package, built by `pip install .`: a build failure fails the run; an unreachable
# package index (exit 3) only skips the Python tests.
status=0
bash scripts/setup-python.sh || status=$?
if [ "$status" -eq 3 ]; then
  echo "test.sh: the Python test requirements did not install; the Python tests will skip" >&2
elif [ "$status" -ne 0 ]; then
  echo "test.sh: the Python package failed to build" >&2
  exit "$status"
fi
JOBS=${JOBS:-$(nproc)}
cmake --preset release >/dev/null
cmake --build --preset release -j "$JOBS"
if [ $# -eq 0 ]; then
  ctest --test-dir build/release --output-on-failure -j "$JOBS" -LE "fuzz|slow"
else
  ctest --test-dir build/release --output-on-failure -j "$JOBS" "$@"
fi
