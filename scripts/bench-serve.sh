#!/usr/bin/env bash
# `quill serve` under load on loopback (tools/bench_serve_load.py): closed-loop clients at 1, 4,
# 16 and 32 (texts of 1-6 words from the Swedish word list: realistic width mix), micro-batching
# on (the defaults: ragged batches of up to 8, 25 ms window) and off (--max-batch 1), in one run;
# then an open-loop overload at OVERLOAD x the measured batched rate for OVERLOAD_S seconds
# (status counts, server RSS before/after, and the 4-client rate again afterwards).
# A third mode, "on x2", is batching on with --executors 2 (the threads split between two line
# models that sample batches at once).
# Usage: scripts/bench-serve.sh [seconds per point] [threads]     (OVERLOAD=4 OVERLOAD_S=60;
#        OVERLOAD_S=0 skips the overload; MODES="on off x2" picks the modes)
set -euo pipefail
cd "$(dirname "$0")/.."
SECS=${1:-20}
THREADS=${2:-2}
OVERLOAD=${OVERLOAD:-4}
OVERLOAD_S=${OVERLOAD_S:-60}
MODES=${MODES:-on off x2}
QUILL=${QUILL:-build/release/quill}
PY=${PYTHON:-python3}
LOAD="$PY tools/bench_serve_load.py"

start_server() {  # $@: extra options; sets URL and PID
  local log
  log=$(mktemp)
  "$QUILL" serve --port 0 --threads "$THREADS" "$@" >"$log" 2>&1 &
  PID=$!
  for _ in $(seq 100); do
    URL=$(grep -o 'http://[^/]*' "$log" | head -1 || true)
    [ -n "$URL" ] && curl -sf "$URL/readyz" >/dev/null && return 0
    sleep 0.2
  done
  echo "bench-serve: server did not start: $(cat "$log")" >&2
  exit 1
}
stop_server() { kill -TERM "$PID"; wait "$PID" || true; }
rss_mib() { awk '/VmRSS/ {printf "%.0f", $2 / 1024}' "/proc/$PID/status"; }

echo "| clients | batching | lines/s | p50 s | p95 s | p99 s | batch sizes (rows: batches) |"
echo "|---|---|---|---|---|---|---|"
declare -A RATE
for mode in $MODES; do
  case $mode in
    on) start_server ;;
    off) start_server --max-batch 1 --batch-window-ms 0 ;;
    x2) start_server --executors 2 ;;
    *) echo "bench-serve: unknown mode $mode (on, off, x2)" >&2; exit 2 ;;
  esac
  $LOAD "$URL" --clients 4 --seconds 3 >/dev/null  # warm the plans of common widths
  for c in 1 4 16 32; do
    r=$($LOAD "$URL" --clients "$c" --seconds "$SECS")
    RATE[$mode,$c]=$(echo "$r" | $PY -c 'import json,sys; print(json.load(sys.stdin)["lines_per_s"])')
    echo "$r" | $PY -c '
import json, sys
r = json.load(sys.stdin); m = sys.argv[1]
h = ", ".join(f"{k}: {v}" for k, v in r["batch_sizes"].items())
print("| {clients} | ".format(**r) + {"on": "on", "off": "off", "x2": "on, 2 executors"}[m] + " | {lines_per_s:.2f} | {p50_s:.2f} | {p95_s:.2f} | {p99_s:.2f} | ".format(**r) + h + " |")' "$mode"
  done
  stop_server
done
for c in 1 4 16 32; do
  line="clients $c:"
  [ -n "${RATE[on,$c]:-}" ] && [ -n "${RATE[off,$c]:-}" ] &&
    line+=" batching on / off throughput = $($PY -c "print(round(${RATE[on,$c]} / ${RATE[off,$c]}, 3))")"
  [ -n "${RATE[x2,$c]:-}" ] && [ -n "${RATE[on,$c]:-}" ] &&
    line+=", 2 executors / 1 (both batching) = $($PY -c "print(round(${RATE[x2,$c]} / ${RATE[on,$c]}, 3))")"
  [ -n "${RATE[x2,$c]:-}" ] && [ -n "${RATE[off,$c]:-}" ] &&
    line+=", 2 executors / off = $($PY -c "print(round(${RATE[x2,$c]} / ${RATE[off,$c]}, 3))")"
  echo "$line"
done
[ "$OVERLOAD_S" = 0 ] && exit 0

# Overload: open-loop arrivals at OVERLOAD x the batched 16-client rate.
start_server
$LOAD "$URL" --clients 16 --seconds 5 >/dev/null
before=$(rss_mib)
rate=$($PY -c "print(${RATE[on,16]} * $OVERLOAD)")
echo
echo "overload: ${OVERLOAD}x the sustainable rate (${rate} req/s) for ${OVERLOAD_S} s, server RSS before ${before} MiB"
$LOAD "$URL" --open-rate "$rate" --seconds "$OVERLOAD_S"
echo "server RSS after: $(rss_mib) MiB"
after=$($LOAD "$URL" --clients 4 --seconds "$SECS")
echo "4 clients after the overload: $after (before: ${RATE[on,4]} lines/s)"
kill -0 "$PID" && echo "server alive after the overload"
stop_server
