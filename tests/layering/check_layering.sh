#!/usr/bin/env bash
# The layering rule (docs/ARCHITECTURE.md): models and pipelines reach kernels only through the op
# layer, so no file under src/models/ or src/pipeline/ includes a backend header (src/backend/...),
# and nothing outside src/backend/cuda/ includes a CUDA header. Usage: check_layering.sh [SRC_ROOT]
set -euo pipefail
root=${1:-$(cd "$(dirname "$0")/../.." && pwd)}
fail=0
if hits=$(grep -rnE '^[[:space:]]*#[[:space:]]*include[[:space:]]*"backend/' "$root/src/models" "$root/src/pipeline"); then
  echo "models and pipelines must call ops through the Dispatcher (runtime/dispatcher.h), not include backends:"
  echo "$hits"
  fail=1
fi
if hits=$(grep -rnE '^[[:space:]]*#[[:space:]]*include[[:space:]]*[<"](cuda|cublas|cuda_runtime)[^">]*[">]' "$root/src" --include='*.cpp' --include='*.h' | grep -v "^$root/src/backend/cuda/"); then
  echo "CUDA headers belong in src/backend/cuda/ only:"
  echo "$hits"
  fail=1
fi
if [ "$fail" -eq 0 ]; then echo "layering: ok"; fi
exit "$fail"
