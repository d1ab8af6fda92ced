#!/usr/bin/env bash
# Does `quill line --batch-file` stream? Runs the shipped model on a SMALL-line and a LARGE-line
# batch file (mixed widths, so every width bucket is used) and reports, for each: seconds to the
# first PNG, peak RSS (VmHWM), wall time and lines written. The large run should have the small
# run's peak RSS (memory does not grow with the file) and write its first PNG as early.
# Usage: scripts/bench-batch-rss.sh [small] [large] [steps]   (defaults 1000 100000 1; PRESET=cpu)
set -euo pipefail
cd "$(dirname "$0")/.."
SMALL=${1:-1000}
LARGE=${2:-100000}
STEPS=${3:-1}
source scripts/bench-common.sh

make_lines() {  # N lines cycling through texts of different lengths
  python3 - "$1" > "$2" <<'EOF'
import sys
words = "Kongl. Maj:ts nådiga förordning om handel och sjöfart i riket år 1766 med mera".split()
n = int(sys.argv[1])
for i in range(n):
    k = 1 + (i * 7) % len(words)
    print(" ".join(words[(i + j) % len(words)] for j in range(k)))
EOF
}

run_one() {  # $1 = lines; prints one result line
  local n=$1 dir="$WORK/out$1"
  mkdir -p "$dir"
  make_lines "$n" "$WORK/lines$n.txt"
  local t0 first="" pid
  t0=$(date +%s.%N)
  "$QUILL" line --batch-file "$WORK/lines$n.txt" --steps "$STEPS" -o "$dir/l.png" >"$WORK/log$n" 2>&1 &
  pid=$!
  local hwm=0
  while kill -0 "$pid" 2>/dev/null; do
    if [ -z "$first" ] && [ -n "$(ls -A "$dir" 2>/dev/null | grep -m1 '\.png$')" ]; then
      first=$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN {printf "%.2f", b - a}')
    fi
    local h
    h=$(awk '/VmHWM/ {print $2}' "/proc/$pid/status" 2>/dev/null || echo 0)
    [ -n "$h" ] && [ "$h" -gt "$hwm" ] && hwm=$h
    sleep 0.2
  done
  wait "$pid"
  local wall written
  wall=$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN {printf "%.1f", b - a}')
  written=$(find "$dir" -name '*.png' | wc -l)
  printf '%7d lines: first PNG after %s s, peak RSS %.1f MiB, wall %s s, %d PNGs written\n' \
    "$n" "${first:-?}" "$(awk -v k="$hwm" 'BEGIN {print k / 1024}')" "$wall" "$written"
  rm -rf "$dir"
}

echo "# $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), $(nproc) threads, steps $STEPS, $(date -u +%F)"
run_one "$SMALL"
run_one "$LARGE"
