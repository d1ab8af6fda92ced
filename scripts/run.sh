#!/usr/bin/env bash
# Sets up (Debian packages), builds, and runs Quill's main job on the embedded default model:
# the handwriting line studio writes "Kongl. Maj:ts nådiga förordning" with models/quill-line
# (a small line model trained here on synthetic data: docs/MODEL_CARD.md), in the model's default
# hand (models/quill-line/style_reference.png), 20 flow-matching steps guided on the style and the
# text (models/quill-line/sampler.json).
# Any arguments are passed on to `quill line` (e.g. --text "..." --style my_hand.png --seed 3).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup-debian.sh
JOBS=${JOBS:-$(nproc)}
cmake --preset release >/dev/null
cmake --build --preset release -j "$JOBS" --target quill
mkdir -p out
if [ $# -eq 0 ]; then
  set -- --text "Kongl. Maj:ts nådiga förordning" -o out/line.png
fi
build/release/quill line "$@"
