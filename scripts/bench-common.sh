# Sourced by the benchmark scripts (from the repository root): builds the quill binary of $PRESET
# (default release; PRESET=cpu for the build without CUDA) and sets QUILL to it, and WORK to a
# temporary folder that is removed on exit.
PRESET=${PRESET:-release}
cmake --build --preset "$PRESET" -j "$(nproc)" --target quill >/dev/null
QUILL=$PWD/build/$PRESET/quill
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
