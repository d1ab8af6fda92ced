#!/usr/bin/env bash
# Start-up cost of the CUDA-enabled build on a machine without a GPU: the whole `quill line` command
# (shipped model) in the release build vs the CPU-only build, RUNS fresh processes of each
# (alternating), median wall time, median CPU time (user + sys) and median peak RSS (/usr/bin/time's
# maximum resident set size), and the release/cpu ratios. Goal: time within 5 %, peak RSS within
# 10 MiB. Run it on an otherwise idle machine. Usage: scripts/bench-startup.sh [runs]
set -euo pipefail
cd "$(dirname "$0")/.."
RUNS=${1:-5}
TEXT="Kongl. Maj:ts nådiga förordning"
for preset in release cpu; do
  [[ -f build/$preset/build.ninja ]] || cmake --preset "$preset" >/dev/null
  if ! log=$(cmake --build "build/$preset" -j "$(nproc)" --target quill 2>&1); then
    echo "$log"
    exit 1
  fi
done
declare -A ms cpu kib
for _ in $(seq "$RUNS"); do
  for preset in release cpu; do
    t0=$(date +%s%N)
    read -r rss user sys < <(/usr/bin/time -f "%M %U %S" "build/$preset/quill" line --text "$TEXT" \
      -o "/tmp/quill-bench-startup-$preset.png" 2>&1 >/dev/null | tail -n 1)
    t1=$(date +%s%N)
    ms[$preset]+="$(((t1 - t0) / 1000000)) "
    cpu[$preset]+="$(awk -v u="$user" -v s="$sys" 'BEGIN {print (u + s) * 1000}') "
    kib[$preset]+="$rss "
  done
done
median() { tr ' ' '\n' <<<"$1" | grep . | sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
echo "# $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), $(nproc) cores, load $(cut -d' ' -f1 /proc/loadavg)," \
  "$RUNS runs each, $(date -u +%F)"
for preset in release cpu; do
  printf '%-8s wall median %4d ms, CPU (user+sys) median %4d ms, peak RSS median %5.1f MiB   (wall ms: %s)\n' \
    "$preset" "$(median "${ms[$preset]}")" "$(median "${cpu[$preset]}")" \
    "$(awk -v k="$(median "${kib[$preset]}")" 'BEGIN {print k / 1024}')" "${ms[$preset]% }"
done
awk -v rt="$(median "${ms[release]}")" -v ct="$(median "${ms[cpu]}")" \
  -v ru="$(median "${cpu[release]}")" -v cu="$(median "${cpu[cpu]}")" \
  -v rr="$(median "${kib[release]}")" -v cr="$(median "${kib[cpu]}")" \
  'BEGIN {printf "release/cpu: wall x%.3f, CPU x%.3f, peak RSS %+.1f MiB\n", rt / ct, ru / cu, (rr - cr) / 1024}'
echo "CUDA libraries in ldd build/release/quill: $(ldd build/release/quill | grep -c -E 'libcudart|libcublas' || true)"
