#!/usr/bin/env bash
# Makes build/venv-serve with tools/requirements-serve.txt (schemathesis, selenium from PyPI) for
# the service's tests. Idempotent: does nothing when the venv already has these exact versions.
set -euo pipefail
cd "$(dirname "$0")/.."
VENV=build/venv-serve
REQ=tools/requirements-serve.txt
STAMP=$VENV/.requirements
if [ -f "$STAMP" ] && cmp -s "$STAMP" "$REQ"; then
  echo "setup-python-serve: $VENV up to date"
  exit 0
fi
mkdir -p build
python3 -m venv "$VENV"
"$VENV/bin/pip" install --quiet --disable-pip-version-check -r "$REQ"
cp "$REQ" "$STAMP"
echo "setup-python-serve: $VENV ready"
