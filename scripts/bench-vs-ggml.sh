#!/usr/bin/env bash
# Quill vs ggml (llamafile on), GEMM by weight type at ggml's shape, side by side in one run.
#
#   bash scripts/bench-vs-ggml.sh /tmp/ggml/build [rounds]
#
# ggml is built outside this repository (docs/PERFORMANCE.md, "Quill vs ggml": a git checkout
# configured with -DGGML_LLAMAFILE=ON -DGGML_NATIVE=ON -DGGML_BUILD_TESTS=ON and
# `--target test-backend-ops`). Each round runs ggml's `test-backend-ops perf -o MUL_MAT` for every
# type, then `quill bench-gemm` at the same product (ggml m=4096 n=512 k=14336 = Quill --m 512
# --k 14336 --n 4096), both on all cores; rounds alternate, the medians over rounds are printed.
# Env: M, N, K (ggml's names), QUILL (the binary, default build/release/quill), TYPES (Quill's rows).
set -euo pipefail
cd "$(dirname "$0")/.."
GGML=${1:?usage: bench-vs-ggml.sh GGML_BUILD_DIR [rounds]}
ROUNDS=${2:-3}
M=${M:-4096} N=${N:-512} K=${K:-14336}
QUILL=${QUILL:-build/release/quill}
# Quill's rows. Where a type has no kernel at this CPU level it runs the scalar reference (on
# AVX2: bf16 activations, q8_0 A8), minutes at this size: leave it out with TYPES.
TYPES=${TYPES:-f32-openblas f16 f16-decode bf16 bf16-decode bf16-onednn q8_0 q8_0-exact tq2-a8 tq2-exact}
OPS=$GGML/bin/test-backend-ops
[ -x "$OPS" ] || { echo "no $OPS: build ggml's test-backend-ops first" >&2; exit 2; }
[ -x "$QUILL" ] || { echo "no $QUILL: build Quill first" >&2; exit 2; }
out=$(mktemp -d)
for r in $(seq "$ROUNDS"); do
  for t in f32 f16 bf16 q8_0 tq2_0; do
    "$OPS" perf -o MUL_MAT -b CPU -p "type_a=$t,type_b=f32,m=$M,n=$N,k=$K" 2>/dev/null | sed 's/\x1b\[[0-9;]*m//g' |
      sed -nE "s/.*MUL_MAT\(type_a=$t,.* ([0-9.]+) GFLOPS.*/ggml $t \1/p" >> "$out/ggml"
  done
  "$QUILL" bench-gemm --m "$N" --k "$K" --n "$M" --reps 3 --json \
    --types $TYPES > "$out/quill_$r.json"
done
python3 - "$out" "$ROUNDS" <<'EOF'
import json, statistics, sys, glob
out, rounds = sys.argv[1], int(sys.argv[2])
g = {}
for line in open(f"{out}/ggml"):
    _, t, v = line.split()
    g.setdefault(t, []).append(float(v))
q = {}
for f in sorted(glob.glob(f"{out}/quill_*.json")):
    for row in json.load(open(f)):
        q.setdefault(row["type"], []).append(row["gflops"])
med = lambda xs: statistics.median(xs) if xs else float("nan")
pairs = [("f32", "f32-openblas"), ("f16", "f16"), ("f16", "f16-decode"), ("bf16", "bf16-onednn"), ("bf16", "bf16"),
         ("bf16", "bf16-decode"), ("q8_0", "q8_0"), ("q8_0", "q8_0-exact"),
         ("tq2_0", "tq2-a8"), ("tq2_0", "tq2-exact")]
print(f"GFLOP/s, median of {rounds} rounds (each ggml figure is its own mean over its runs)")
print(f"{'ggml type':10s} {'ggml':>8s}   {'Quill type':14s} {'Quill':>8s}  Quill/ggml")
for gt, qt in pairs:
    a, b = med(g.get(gt, [])), med(q.get(qt, []))
    print(f"{gt:10s} {a:8.1f}   {qt:14s} {b:8.1f}  {b / a:6.2f}")
EOF
rm -rf "$out"
