#!/usr/bin/env bash
# A/B two quill binaries on this machine, alternating rounds so both see the same load:
# `quill bench-gemm` (M = 1024, K = N = 3072, every weight type) and the mid SD3 forward with f32
# and tq2_0_g128 weights (default mode), medians over ROUNDS. Builds the models of
# scripts/bench-ternary-rss.sh first if they are missing (needs the tools venv).
# Usage: scripts/bench-ab.sh OLD_QUILL NEW_QUILL [threads] [rounds]
# Env: TYPES (bench-gemm --types), SHAPE ("M K N", default "1024 3072 3072"), FORWARD=0 skips the
# SD3 forwards (GEMM rows only), FORWARDS (default "f32 tq2_0_g128"; also q8_0, and NAME.exact for
# a quantized model under QUILL_TERNARY_MODE=exact).
# e.g. an older commit:  git worktree add /tmp/old <commit> && (cd /tmp/old && cmake --preset release &&
#   cmake --build --preset release --target quill); scripts/bench-ab.sh /tmp/old/build/release/quill build/release/quill
set -euo pipefail
cd "$(dirname "$0")/.."
OLD=${1:?usage: scripts/bench-ab.sh OLD_QUILL NEW_QUILL [threads] [rounds]}
NEW=${2:?usage: scripts/bench-ab.sh OLD_QUILL NEW_QUILL [threads] [rounds]}
THREADS=${3:-2}
ROUNDS=${4:-3}
FORWARD=${FORWARD:-1}
read -r GM GK GN <<<"${SHAPE:-1024 3072 3072}"
DIR=build/sd3_mid
[ "$FORWARD" = 0 ] || [ -f "$DIR.tq2_0_g128.gguf" ] || bash scripts/bench-ternary-rss.sh "$THREADS" >/dev/null
OUT=$(mktemp -d)
trap 'rm -rf "$OUT"' EXIT
echo "# $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), isa $("$NEW" version | sed -n "s/^cpu: isa=\([a-z0-9]*\).*/\1/p"), threads $THREADS, $ROUNDS rounds, bench-gemm M K N = $GM $GK $GN, $(date -u +%F)"
for r in $(seq "$ROUNDS"); do
  for side in old new; do
    bin=$OLD
    [ "$side" = new ] && bin=$NEW
    "$bin" bench-gemm --m "$GM" --k "$GK" --n "$GN" --threads "$THREADS" --reps 3 --json \
      --types "${TYPES:-f32-openblas,tq2-exact,tq2-a8,f16}" >"$OUT/gemm.$side.$r.json"
    [ "$FORWARD" = 0 ] && continue
    for m in ${FORWARDS:-f32 tq2_0_g128}; do
      model=$DIR
      [ "$m" = f32 ] || model=$DIR.${m%.exact}.gguf
      mode=${QUILL_TERNARY_MODE:-}
      [ "${m%.exact}" = "$m" ] || mode=exact
      QUILL_TERNARY_MODE=$mode "$bin" forward --model "$model" --inputs "$DIR/inputs.safetensors" -o "$OUT/o.safetensors" \
        --threads "$THREADS" --repeat 3 --json >"$OUT/fwd.$m.$side.$r.json"
    done
  done
done
python3 - "$OUT" "$ROUNDS" "$FORWARD" "${FORWARDS:-f32 tq2_0_g128}" <<'PYEOF'
import json, statistics, sys
out, rounds, forward, models = sys.argv[1], int(sys.argv[2]), sys.argv[3] != "0", sys.argv[4].split()
med = statistics.median
def gemm(side):
    rows = {}
    for r in range(1, rounds + 1):
        for row in json.load(open(f"{out}/gemm.{side}.{r}.json")):
            if row.get("gflops"):
                rows.setdefault(row["type"], []).append((row["gflops"], row.get("vs_sgemm", 0)))
    return rows
old, new = gemm("old"), gemm("new")
print(f"{'bench-gemm type':16s} {'old GFLOP/s':>11s} {'new GFLOP/s':>11s} {'new/old':>8s} {'old x sgemm':>11s} {'new x sgemm':>11s}")
for t in new:
    o, n = old.get(t, []), new[t]
    og = med(g for g, _ in o) if o else 0.0
    ng = med(g for g, _ in n)
    print(f"{t:16s} {og:11.1f} {ng:11.1f} {ng / og if og else 0:8.2f} "
          f"{(med(x for _, x in o) if o else 0):11.2f} {med(x for _, x in n):11.2f}")
if not forward:
    sys.exit(0)
print(f"{'mid SD3 forward':16s} {'old ms':>11s} {'new ms':>11s} {'old/new':>8s}")
for m in models:
    t = {s: med(json.load(open(f"{out}/fwd.{m}.{s}.{r}.json"))["median_s"] * 1e3 for r in range(1, rounds + 1))
         for s in ("old", "new")}
    print(f"{m:16s} {t['old']:11.1f} {t['new']:11.1f} {t['old'] / t['new']:8.2f}")
PYEOF
