#!/usr/bin/env bash
# FLUX.2 [klein]'s text encoder at Qwen3-4B shapes (random weights, tools/bench_torch_qwen3.py; the
# 27 layers klein reads), one 512-token prompt, side by side in one run: torch bf16 (transformers)
# vs `quill encode-prompt` on the bf16 weights and on a q8_0 GGUF (`quill quantize`), each exact and
# A8 (QUILL_TERNARY_MODE=a8: int8 activations for q8_0, bf16 activations for bf16: Quill's kernel,
# oneDNN's with AMX or QUILL_BF16_ONEDNN=1); medians of RUNS fresh processes' encode times (load not
# counted) and peak RSS.
# Usage: scripts/bench-qwen3-cpu.sh [threads] [runs]     (DIR=build/qwen3_4b by default, ~7 GB)
set -euo pipefail
cd "$(dirname "$0")/.."
THREADS=${1:-$(nproc)}
RUNS=${2:-3}
VENV=${VENV:-$( [ -d .venv ] && echo .venv || echo /work/venv-tools )}
PY="$VENV/bin/python"
DIR=${DIR:-build/qwen3_4b}
cmake --build --preset release -j "$(nproc)" --target quill >/dev/null
QUILL=build/release/quill
TOK=tests/fixtures/tokenizer/tokenizer.json
[ -f "$DIR/config.json" ] || { echo "== making the random Qwen3-4B-shaped encoder in $DIR" >&2; "$PY" tools/bench_torch_qwen3.py make "$DIR" >&2; }
[ -f "$DIR.q8.gguf" ] || { echo "== quill quantize -> q8_0" >&2; "$QUILL" quantize "$DIR" "$DIR.q8.gguf" --type q8_0 >/dev/null; }
echo "== torch bf16" >&2
TORCH=$("$PY" tools/bench_torch_qwen3.py time "$DIR" --threads "$THREADS" --runs "$RUNS")
quill_runs() {  # $1 model; prints "median_ms peak_mib"
  local ms=() rss=()
  for _ in $(seq "$RUNS"); do
    line=$("$QUILL" encode-prompt --text-encoder "$1" --tokenizer "$TOK" --prompt "a red fox in snow" \
      --threads "$THREADS" -o "$DIR.emb.safetensors" | grep '^timing:')
    ms+=("$(sed -E 's/.*encode ([0-9.]+) ms.*/\1/' <<<"$line")")
    rss+=("$(sed -E 's/.*peak RSS ([0-9.]+) MiB.*/\1/' <<<"$line")")
  done
  echo "$(printf '%s\n' "${ms[@]}" | sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}') \
$(printf '%s\n' "${rss[@]}" | sort -g | tail -1)"
}
echo "== quill bf16" >&2;      B=$(quill_runs "$DIR")
echo "== quill bf16 A8 (bf16 activations)" >&2; BA=$(QUILL_TERNARY_MODE=a8 quill_runs "$DIR")
echo "== quill q8_0 exact" >&2; X=$(quill_runs "$DIR.q8.gguf")
echo "== quill q8_0 A8" >&2;    A=$(QUILL_TERNARY_MODE=a8 quill_runs "$DIR.q8.gguf")
"$PY" - "$TORCH" "$B" "$BA" "$X" "$A" <<'PYEOF'
import json, sys
t = json.loads(sys.argv[1])
rows = [("torch bf16 (transformers)", t["median_s"], t["peak_rss_bytes"] / 2**20)]
for name, s in (("Quill bf16 exact", sys.argv[2]), ("Quill bf16 A8 (bf16 activations)", sys.argv[3]),
                ("Quill q8_0 exact", sys.argv[4]), ("Quill q8_0 A8", sys.argv[5])):
    ms, mib = (float(v) for v in s.split())
    rows.append((name, ms / 1e3, mib))
cpu = open('/proc/cpuinfo').read().split('model name')[1].split(':')[1].splitlines()[0].strip()
amx = 'amx_tile' in open('/proc/cpuinfo').read()
print(f"# {cpu} ({'AMX' if amx else 'no AMX'}), threads {t['threads']}, runs {t['runs']}, torch {t['torch']}")
print("| 512-token klein prompt, Qwen3-4B shapes (27 layers) | median s | vs torch bf16 | peak RSS MiB |")
print("|---|---|---|---|")
for name, s, mib in rows:
    print(f"| {name} | {s:.2f} | {s / rows[0][1]:.3f} | {mib:.0f} |")
PYEOF
