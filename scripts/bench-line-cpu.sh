#!/usr/bin/env bash
# Time of one line with the shipped model as `quill line` runs it by default (20 steps, style CFG as
# one 2x batch, the model's sampler.json), RUNS fresh processes, median of the sampling time and
# of the whole command. Usage: scripts/bench-line-cpu.sh [threads] [runs]   (PRESET=cpu for no CUDA)
set -euo pipefail
cd "$(dirname "$0")/.."
THREADS=${1:-$(nproc)}
RUNS=${2:-5}
PRESET=${PRESET:-release}
cmake --build --preset "$PRESET" -j "$(nproc)" --target quill >/dev/null
QUILL=build/$PRESET/quill
TEXT="Kongl. Maj:ts nådiga förordning"
samples=() totals=()
for _ in $(seq "$RUNS"); do
  t0=$(date +%s.%N)
  line=$("$QUILL" line --text "$TEXT" --threads "$THREADS" -o /tmp/quill-bench-line.png | grep '^timing:')
  t1=$(date +%s.%N)
  samples+=("$(sed -E 's/.*sample ([0-9.]+) ms.*/\1/' <<<"$line")")
  totals+=("$(awk -v a="$t0" -v b="$t1" 'BEGIN {print (b - a) * 1000}')")
done
median() { printf '%s\n' "$@" | sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
echo "# $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), threads $THREADS, $RUNS runs, $(date -u +%F)"
printf 'one line (%s): sampling median %.0f ms, whole command (load + style + render + sample + PNG) median %.0f ms\n' \
  "$TEXT" "$(median "${samples[@]}")" "$(median "${totals[@]}")"
