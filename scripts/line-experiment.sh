#!/usr/bin/env bash
# One equal-CPU-budget experiment of the line model (issue 20): train, export the EMA weights, evaluate.
#
#   bash scripts/line-experiment.sh NAME DATA CPU_MINUTES [train_line_model.py flags...]
#
# Env: PY (python with torch), QUILL (the quill binary), RUNS (folder for run data, never committed),
# TEXTS (texts per font for eval_cer.py, default 8), CLASSIFIER (tools/font_classifier.py's file),
# THREADS (trainer threads, default 1). Everything runs at nice 19; the budget is the trainer's CPU time,
# so a run that is SIGSTOPped or starved by other work on the machine still gets the same training.
# Writes $RUNS/NAME/{train.log,summary.json,model/,eval.json,eval.log}.
set -euo pipefail
name=$1 data=$2 minutes=$3
shift 3
PY=${PY:-/work/venv-tools/bin/python}
QUILL=${QUILL:-build/release/quill}
RUNS=${RUNS:-/work/line-runs}
TEXTS=${TEXTS:-8}
THREADS=${THREADS:-1}
run=$RUNS/$name
mkdir -p "$run"
resume=()
[ -f "$run/checkpoint.pt" ] && resume=(--resume)
nice -n 19 "$PY" tools/train_line_model.py --data "$data" --run "$run" --cpu-minutes "$minutes" --threads "$THREADS" \
  --batch 32 "${resume[@]}" "$@" >> "$run/train.log" 2>&1
nice -n 19 "$PY" tools/train_line_model.py --run "$run" --export "$run/model" >> "$run/train.log" 2>&1
# sampling defaults and default hand as shipped
cp models/quill-line/sampler.json models/quill-line/style_reference.png "$run/model/"
clf=()
[ -n "${CLASSIFIER:-}" ] && clf=(--classifier "$CLASSIFIER")
nice -n 19 "$PY" tools/eval_cer.py --quill "$QUILL" --model "$run/model" --texts "$TEXTS" --threads "$THREADS" \
  --out "$run/eval" --json "$run/eval.json" "${clf[@]}" > "$run/eval.log" 2>&1 || true
tail -4 "$run/eval.log"
