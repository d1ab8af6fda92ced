#!/usr/bin/env bash
# CPU linear by weight type against OpenBLAS sgemm (and oneDNN bf16) in one run: M in {256, 1024,
# 4096} x (K, N) in {(1536, 1536), (3072, 3072), (3072, 12288)}, every type, median of REPS runs.
# Usage: scripts/bench-gemm-cpu.sh [threads] [reps]   (PRESET=cpu to use a CUDA-less build)
set -euo pipefail
cd "$(dirname "$0")/.."
THREADS=${1:-$(nproc)}
REPS=${2:-3}
PRESET=${PRESET:-release}
cmake --build --preset "$PRESET" -j "$(nproc)" --target quill >/dev/null
QUILL=build/$PRESET/quill
echo "# $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), $(nproc) CPUs, $(date -u +%F)"
first=1
for kn in 1536x1536 3072x3072 3072x12288; do
  K=${kn%x*}
  N=${kn#*x}
  "$QUILL" bench-gemm --m 256,1024,4096 --k "$K" --n "$N" --threads "$THREADS" --reps "$REPS" |
    if [ $first = 1 ]; then cat; else tail -n +3; fi
  first=0
done
