#!/usr/bin/env bash
# Peak RSS (and time) of one SD3 forward with f32 weights vs the same model quantized by
# `quill quantize` (tq2_0_g128 and q8_0), each in a fresh process, on the mid-size random config
# of scripts/bench-sd3-cpu.sh (12 layers, 12 heads x 64, 1024 image + 154 text tokens, batch 2).
# tq2_0_g128 runs in its default mode (A8) and again with QUILL_TERNARY_MODE=exact.
# Needs the tools venv for the model itself (tools/README.md). Usage: scripts/bench-ternary-rss.sh [threads]
set -euo pipefail
cd "$(dirname "$0")/.."
THREADS=${1:-2}
VENV=${VENV:-$( [ -d .venv ] && echo .venv || echo /work/venv-tools )}
PRESET=${PRESET:-release}
QUILL=build/$PRESET/quill
DIR=build/sd3_mid
cmake --build --preset "$PRESET" -j "$(nproc)" --target quill >/dev/null
if [ ! -f "$DIR/inputs.safetensors" ]; then
  "$VENV/bin/python" tools/bench_torch_sd3.py --threads "$THREADS" --runs 1 --save "$DIR" >/dev/null
fi
for t in tq2_0_g128 q8_0; do
  [ -f "$DIR.$t.gguf" ] || "$QUILL" quantize "$DIR" "$DIR.$t.gguf" --type "$t" --quiet
done
run() {  # model label
  "$QUILL" forward --model "$1" --inputs "$DIR/inputs.safetensors" -o "$DIR/out.$2.safetensors" \
    --threads "$THREADS" --repeat 3 --json
}
F32=$(run "$DIR" f32)
TQ2=$(run "$DIR.tq2_0_g128.gguf" tq2_0_g128)                                 # default: A8
TQ2X=$(QUILL_TERNARY_MODE=exact run "$DIR.tq2_0_g128.gguf" tq2_0_g128.exact)
Q8=$(run "$DIR.q8_0.gguf" q8_0)                                              # default: exact
"$VENV/bin/python" - "$F32" "$TQ2" "$TQ2X" "$Q8" "$DIR" <<'PYEOF'
import json, os, sys
from safetensors.numpy import load_file
import numpy as np
f32, tq2, tq2x, q8 = (json.loads(a) for a in sys.argv[1:5])
d = sys.argv[5]
ref = load_file(f"{d}/out.f32.safetensors")["sample"].ravel().astype(np.float64)
def cos(name):
    o = load_file(f"{d}/out.{name}.safetensors")["sample"].ravel().astype(np.float64)
    return float(o @ ref / np.sqrt((o @ o) * (ref @ ref)))
size = lambda p: sum(os.path.getsize(os.path.join(p, f)) for f in os.listdir(p) if f.endswith(".safetensors") and "out." not in f and "input" not in f and "expected" not in f) if os.path.isdir(p) else os.path.getsize(p)
print(f"{'weights':18s} {'file MiB':>9s} {'peak RSS MiB':>13s} {'RSS / f32':>10s} {'median ms':>10s} {'x f32 time':>10s} {'cos vs f32':>11s}")
for name, r, path in (("f32", f32, d), ("tq2_0_g128", tq2, f"{d}.tq2_0_g128.gguf"),
                      ("tq2_0_g128.exact", tq2x, f"{d}.tq2_0_g128.gguf"), ("q8_0", q8, f"{d}.q8_0.gguf")):
    print(f"{name:18s} {size(path) / 2**20:9.1f} {r['peak_rss_bytes'] / 2**20:13.1f} "
          f"{r['peak_rss_bytes'] / f32['peak_rss_bytes']:10.3f} {r['median_s'] * 1e3:10.1f} "
          f"{r['median_s'] / f32['median_s']:10.3f} "
          f"{(cos(name) if name != 'f32' else 1.0):11.6f}")
PYEOF
