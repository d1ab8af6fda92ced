#!/usr/bin/env bash
# Makes build/venv-py (tools/requirements-python.txt: numpy, Pillow, pytest, Ray Serve, and the
# package's build backend) and installs the `quill` package from this tree into it with
# `pip install .`, the way a user does. The build directory (build/pip/<tag>) is kept, so a second
# run rebuilds only what changed.
#
# Exit status: 0 installed; 3 the requirements could not be installed (no package index: the
# Python tests then skip); anything else means the package itself failed to build (a real failure).
set -euo pipefail
cd "$(dirname "$0")/.."
VENV=build/venv-py
REQ=tools/requirements-python.txt
STAMP=$VENV/.requirements
mkdir -p build
if ! { [ -f "$STAMP" ] && cmp -s "$STAMP" "$REQ"; }; then
  if ! { python3 -m venv "$VENV" && "$VENV/bin/pip" install --quiet --disable-pip-version-check -r "$REQ"; }; then
    echo "setup-python: could not install $REQ into $VENV" >&2
    exit 3
  fi
  cp "$REQ" "$STAMP"
fi
# --no-build-isolation: build with the pinned backend already in the venv, in the kept build dir.
echo "setup-python: pip install . (first build: a few minutes)"
"$VENV/bin/pip" install --quiet --disable-pip-version-check --no-build-isolation --no-deps .
"$VENV/bin/python" -c "import quill; print('setup-python: quill', quill.__version__, 'installed in $VENV')"
