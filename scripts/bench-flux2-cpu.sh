#!/usr/bin/env bash
# FLUX.2 [klein]-4B-shaped transformer on this CPU, side by side in one run (random weights made by
# tools/bench_torch_flux2.py, never downloaded): one 512x512 denoising step (1024 image + 512 text
# tokens) in torch bf16 (diffusers), Quill bf16 (f32 and bf16 activations), Quill tq2_0_g128 exact and A8 (quantized by
# `quill quantize`), medians of RUNS and each process's peak RSS; then Quill's whole 4-step 512x512
# image from the ternary GGUF. Needs the tools venv at $VENV, ~20 GB RAM and ~10 GB disk in $DIR.
# Usage: scripts/bench-flux2-cpu.sh [threads] [runs]      (DIR=build/flux2_klein4b by default)
set -euo pipefail
cd "$(dirname "$0")/.."
THREADS=${1:-$(nproc)}
RUNS=${2:-3}
VENV=${VENV:-$( [ -d .venv ] && echo .venv || echo /work/venv-tools )}
PY="$VENV/bin/python"
DIR=${DIR:-build/flux2_klein4b}
cmake --build --preset release -j "$(nproc)" --target quill >/dev/null
QUILL=build/release/quill
[ -f "$DIR/inputs.safetensors" ] || { echo "== making the random klein-4B-shaped models in $DIR" >&2; "$PY" tools/bench_torch_flux2.py make "$DIR" >&2; }
[ -f "$DIR/klein-tq2.gguf" ] || { echo "== quill quantize -> tq2_0_g128" >&2; "$QUILL" quantize "$DIR/transformer" "$DIR/klein-tq2.gguf" --type tq2_0_g128 >&2; }
echo "== torch bf16" >&2
TORCH=$("$PY" tools/bench_torch_flux2.py time "$DIR" --threads "$THREADS" --runs "$RUNS")
run_quill() {  # $1 model, extra env in the caller
  "$QUILL" forward --model "$1" --inputs "$DIR/inputs.safetensors" -o "$DIR/quill_sample.safetensors" \
    --threads "$THREADS" --repeat "$RUNS" --device cpu --json
}
echo "== quill bf16" >&2
Q_BF16=$(run_quill "$DIR/transformer")
echo "== quill bf16, bf16 activations (QUILL_TERNARY_MODE=a8)" >&2
Q_BF16A=$(QUILL_TERNARY_MODE=a8 run_quill "$DIR/transformer")
echo "== quill tq2_0_g128 exact" >&2
Q_TQ2=$(QUILL_TERNARY_MODE=exact run_quill "$DIR/klein-tq2.gguf")  # A8 is ternary's default
echo "== quill tq2_0_g128 A8" >&2
Q_A8=$(QUILL_TERNARY_MODE=a8 run_quill "$DIR/klein-tq2.gguf")
echo "== quill 4-step 512x512 image (tq2_0_g128 A8)" >&2
t0=$(date +%s.%N)
IMG=$(QUILL_TERNARY_MODE=a8 "$QUILL" generate --model "$DIR/klein-tq2.gguf" --vae "$DIR/vae" --cond "$DIR/cond.safetensors" \
  --width 512 --height 512 --steps 4 --threads "$THREADS" --device cpu -o "$DIR/klein-tq2.png" | grep '^timing:')
t1=$(date +%s.%N)
"$PY" - "$TORCH" "$Q_BF16" "$Q_TQ2" "$Q_A8" "$Q_BF16A" "$IMG" "$t0" "$t1" <<'PYEOF'
import json, sys
t, b, x, a, ba = (json.loads(s) for s in sys.argv[1:6])
img, t0, t1 = sys.argv[6], float(sys.argv[7]), float(sys.argv[8])
cpu = open('/proc/cpuinfo').read().split('model name')[1].split(':')[1].splitlines()[0].strip()
amx = 'amx_tile' in open('/proc/cpuinfo').read()
print(f"# {cpu} ({'AMX' if amx else 'no AMX'}), threads {t['threads']}, runs {t['runs']}, torch {t['torch']}")
print("| one 512x512 step (1024 + 512 tokens) | median s | vs torch bf16 | peak RSS GiB |")
print("|---|---|---|---|")
for name, r in (("torch bf16 (diffusers)", t), ("Quill bf16 (f32 activations)", b), ("Quill bf16 (bf16 activations)", ba),
                ("Quill tq2_0_g128 exact", x), ("Quill tq2_0_g128 A8", a)):
    print(f"| {name} | {r['median_s']:.2f} | {r['median_s'] / t['median_s']:.3f} | {r['peak_rss_bytes'] / 2**30:.2f} |")
print(f"ternary peak RSS / Quill bf16 peak RSS = {x['peak_rss_bytes'] / b['peak_rss_bytes']:.3f}")
print(f"whole 4-step 512x512 image, tq2_0_g128 A8 (load + 4 steps + VAE decode + PNG): {t1 - t0:.1f} s")
print(img)
PYEOF
