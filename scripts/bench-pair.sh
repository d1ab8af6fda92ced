#!/usr/bin/env bash
# Paired A/B of one bench-gemm row for two quill binaries: ROUNDS back-to-back pairs (old, new),
# each `bench-gemm --reps 3`; prints the medians, the median of the per-pair new/old ratios and how
# many pairs the new binary won. On a VM whose speed drifts by ±20 % over minutes, pairs taken
# seconds apart compare better than medians over a whole run (scripts/bench-ab.sh).
# Usage: scripts/bench-pair.sh OLD_QUILL NEW_QUILL TYPE [threads] [rounds] [M K N]
# e.g.   scripts/bench-pair.sh /tmp/old/quill build/release/quill tq2-a8 2 15 1024 3072 3072
set -euo pipefail
OLD=${1:?usage: bench-pair.sh OLD_QUILL NEW_QUILL TYPE [threads] [rounds] [M K N]}
NEW=${2:?usage: bench-pair.sh OLD_QUILL NEW_QUILL TYPE [threads] [rounds] [M K N]}
TYPE=${3:?usage: bench-pair.sh OLD_QUILL NEW_QUILL TYPE [threads] [rounds] [M K N]}
THREADS=${4:-2}
ROUNDS=${5:-15}
M=${6:-1024} K=${7:-3072} N=${8:-3072}
gflops() {
  "$1" bench-gemm --m "$M" --k "$K" --n "$N" --threads "$THREADS" --reps 3 --types "$TYPE" --json |
    python3 -c "import json, sys; print([r['gflops'] for r in json.load(sys.stdin) if r['type'] == sys.argv[1]][0])" "$TYPE"
}
echo "# $TYPE, M K N = $M $K $N, threads $THREADS, $ROUNDS pairs, $(date -u +%F)"
for _ in $(seq "$ROUNDS"); do
  echo "$(gflops "$OLD") $(gflops "$NEW")"
done | python3 -c "
import statistics, sys
pairs = [tuple(map(float, line.split())) for line in sys.stdin]
ratios = [n / o for o, n in pairs]
print(f'old {statistics.median(o for o, _ in pairs):.1f} GFLOP/s, new {statistics.median(n for _, n in pairs):.1f}, '
      f'median new/old {statistics.median(ratios):.3f}, new won {sum(r > 1 for r in ratios)} of {len(pairs)}')"
