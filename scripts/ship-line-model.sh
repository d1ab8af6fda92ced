#!/usr/bin/env bash
# Ends a line-model training stage (issue 20): installs an exported model folder (the `model/` of a
# scripts/line-experiment.sh run) as models/quill-line, then redoes everything tied to the shipped
# weights: the CTest reference line, the quantized variants' gate verdicts (variants.json) and the
# README figure. Sampler defaults (sampler.json) and the default hand stay unless the export has its own.
#
#   bash scripts/ship-line-model.sh EXPORTED_MODEL_DIR EVAL_OUT_DIR CLASSIFIER
#
# EVAL_OUT_DIR: the --out folder of tools/eval_cer.py run on the exported model (the figure's lines).
# CLASSIFIER: tools/font_classifier.py's file (the gate's font-accuracy criterion).
# Env: PY (python with the tools' requirements), QUILL (the quill binary), TEXTS (texts per font for
# the variants' gate, default 8), THREADS (default: all cores).
set -euo pipefail
cd "$(dirname "$0")/.."
if [ $# -ne 3 ]; then
  sed -n 2,12p "$0" >&2
  exit 2
fi
src=$1 eval_dir=$2 classifier=$3
PY=${PY:-/work/venv-tools/bin/python}
QUILL=${QUILL:-build/release/quill}
TEXTS=${TEXTS:-8}
THREADS=${THREADS:-$(nproc)}
dst=models/quill-line
for f in config.json model.safetensors training.json style_encoder/config.json style_encoder/model.safetensors \
  style_encoder/style_layout.json; do
  [ -f "$src/$f" ] || { echo "ship-line-model: $src/$f is missing (not an exported line model?)" >&2; exit 1; }
done
[ -d "$eval_dir" ] || { echo "ship-line-model: no eval folder $eval_dir" >&2; exit 1; }
[ -f "$classifier" ] || { echo "ship-line-model: no classifier $classifier" >&2; exit 1; }

cp "$src/config.json" "$src/model.safetensors" "$src/training.json" "$dst/"
cp "$src/style_encoder/"* "$dst/style_encoder/"
for f in sampler.json style_reference.png; do
  if [ -f "$src/$f" ] && ! cmp -s "$src/$f" "$dst/$f"; then cp "$src/$f" "$dst/"; fi
done
size=$(du -sb models | cut -f1)
if [ "$size" -gt $((25 * 1024 * 1024)) ]; then
  echo "ship-line-model: models/ is $size bytes, over the 25 MiB limit" >&2
  exit 1
fi
echo "ship-line-model: installed $src as $dst ($(du -sh "$dst" | cut -f1))"

# 2 threads and seed 0, as DefaultLineModel.WritesHandwritingNotNoise writes it.
"$QUILL" line --model "$dst" --text "Kongl. Maj:ts nådiga förordning" --seed 0 --threads 2 \
  -o tests/fixtures/line/default_kongl.png
echo "ship-line-model: CTest reference line rewritten (tests/fixtures/line/default_kongl.png)"

"$PY" tools/gate_variants.py --quill "$QUILL" --model "$dst" --classifier "$classifier" --texts "$TEXTS" \
  --threads "$THREADS" --out docs/eval/variants
echo "ship-line-model: variants gated ($dst/variants.json)"

"$PY" tools/make_lines_figure.py --quill "$QUILL" --model "$dst" --eval "$eval_dir" --out docs/images/lines.png
echo "ship-line-model: README figure rewritten (docs/images/lines.png)"
