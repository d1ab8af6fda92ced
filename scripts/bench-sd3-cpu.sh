#!/usr/bin/env bash
# Quill vs PyTorch (diffusers) on the same mid-size random SD3 MMDiT, same machine, same thread
# count, in one run: 12 layers, 12 heads x 64, latent 32x32 (1024 image tokens), 154 text tokens,
# batch 2. Needs the tools venv (tools/README.md) at $VENV (default /work/venv-tools or .venv).
# Usage: scripts/bench-sd3-cpu.sh [threads] [runs]
#   QUILL=path/to/quill  time that binary instead of this tree's release build (A/B of two builds)
set -euo pipefail
cd "$(dirname "$0")/.."
THREADS=${1:-2}
RUNS=${2:-5}
VENV=${VENV:-$( [ -d .venv ] && echo .venv || echo /work/venv-tools )}
PY="$VENV/bin/python"
DIR=build/sd3_mid
QUILL=${QUILL:-}
if [ -z "$QUILL" ]; then
  cmake --build --preset release -j "$(nproc)" --target quill >/dev/null
  QUILL=build/release/quill
fi
echo "== torch (diffusers) on $THREADS threads" >&2
TORCH=$("$PY" tools/bench_torch_sd3.py --threads "$THREADS" --runs "$RUNS" --save "$DIR")
echo "== quill on $THREADS threads" >&2
QUILL_OUT=$(OPENBLAS_NUM_THREADS=$THREADS "$QUILL" forward --model "$DIR" --inputs "$DIR/inputs.safetensors" \
        -o "$DIR/quill_sample.safetensors" --threads "$THREADS" --repeat "$RUNS" --json)
"$PY" - "$TORCH" "$QUILL_OUT" "$DIR" <<'PYEOF'
import json, sys
import torch
from safetensors.torch import load_file
t, q, d = json.loads(sys.argv[1]), json.loads(sys.argv[2]), sys.argv[3]
ref = load_file(f"{d}/expected.safetensors")["sample"]
out = load_file(f"{d}/quill_sample.safetensors")["sample"]
rel = ((out - ref).norm() / ref.norm()).item()
print(f"machine: {open('/proc/cpuinfo').read().split('model name')[1].split(':')[1].splitlines()[0].strip()}, threads {t['threads']}")
print(f"torch {t['torch']} median {t['median_s']*1e3:.1f} ms | quill median {q['median_s']*1e3:.1f} ms "
      f"(plan build {q['plan_build_s']*1e3:.1f} ms, arena {q['arena_bytes']/2**20:.1f} MiB)")
print(f"ratio quill/torch = {q['median_s']/t['median_s']:.3f}  (<= 1.0 means Quill is not slower); rel err vs torch {rel:.2e}")
PYEOF
