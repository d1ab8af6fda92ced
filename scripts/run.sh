#!/usr/bin/env bash
# Sets up (Debian packages), builds, and runs Quill's main job on the embedded default model.
#
# The handwriting line model is not trained yet (see docs/MODEL_CARD.md once it is), so this runs
# the tiny bundled test model end to end instead -- a random SD3 transformer + AutoencoderKL from
# tests/fixtures/pipeline, 4 flow-matching steps with batched CFG -- and says so. Its pictures are
# noise-like by design: the weights are random; what it proves is that the whole path runs.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup-debian.sh
JOBS=${JOBS:-$(nproc)}
cmake --preset release >/dev/null
cmake --build --preset release -j "$JOBS" --target quill
mkdir -p out
QUILL=build/release/quill
FIX=tests/fixtures/pipeline
echo "quill: no trained handwriting line model is installed yet; running the tiny bundled test model end to end (random weights)."
"$QUILL" generate --model "$FIX/transformer" --vae "$FIX/vae" \
  --cond "$FIX/cfg5/cond.safetensors" --negative "$FIX/cfg5/negative.safetensors" \
  --steps 4 --cfg 5 --shift 3 --seed 1 --width 16 --height 16 -o out/quill-demo.png
echo "done: out/quill-demo_0.png, out/quill-demo_1.png"
