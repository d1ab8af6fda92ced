#!/usr/bin/env bash
# The most any scheduler can gain from micro-batching on this machine (issue 19): LINES copies of one
# line (one width, so no padding) written by `quill line --batch-file` in batches of 8 and one at a
# time, alternating, ROUNDS rounds; prints each time and the median ratio (batched lines/s over
# unbatched). Usage: scripts/bench-batch-ceiling.sh [threads] [rounds] [lines]   (PRESET=cpu: no CUDA)
set -euo pipefail
cd "$(dirname "$0")/.."
THREADS=${1:-$(nproc)}
ROUNDS=${2:-3}
LINES=${3:-32}
source scripts/bench-common.sh
for _ in $(seq "$LINES"); do echo "Kongl. Maj:ts nådiga förordning"; done > "$WORK/lines.txt"
ratios=()
for r in $(seq "$ROUNDS"); do
  declare -A secs=()
  for b in 8 1; do
    rm -rf "$WORK/out" && mkdir "$WORK/out"
    t0=$(date +%s.%N)
    "$QUILL" line --batch-file "$WORK/lines.txt" --max-batch "$b" --threads "$THREADS" --seed 1 -o "$WORK/out/l.png" >/dev/null
    t1=$(date +%s.%N)
    secs[$b]=$(awk -v a="$t0" -v b="$t1" 'BEGIN {print b - a}')
  done
  ratio=$(awk -v one="${secs[1]}" -v eight="${secs[8]}" 'BEGIN {printf "%.3f", one / eight}')
  ratios+=("$ratio")
  printf 'round %d: %d lines, max-batch 8 %.2f s, max-batch 1 %.2f s, batched / unbatched throughput %s\n' \
    "$r" "$LINES" "${secs[8]}" "${secs[1]}" "$ratio"
  unset secs
done
median() { printf '%s\n' "$@" | sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
echo "# $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), threads $THREADS, $(date -u +%F)"
echo "batching ceiling (one width, batches of 8 vs 1): median $(median "${ratios[@]}")x"
