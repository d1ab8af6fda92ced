#!/usr/bin/env bash
# Run HERE (where apt works), before a device check: downloads the few Debian packages a lean GPU
# build needs and the device machine lacks (it reaches no package registry), and unpacks them into
# .debs/prefix, which scripts/device-check.sh reads (name .debs in the device call's `carry`).
#   header-only: nlohmann-json3-dev, libcli11-dev
#   tests and benchmarks: libgtest-dev (static libs), libbenchmark-dev + libbenchmark1debian
# Nothing is installed on this machine; .debs/ is git-ignored.
set -euo pipefail
cd "$(dirname "$0")/.."
PKGS=(nlohmann-json3-dev libcli11-dev libgtest-dev libbenchmark-dev libbenchmark1debian)
mkdir -p .debs
cd .debs
rm -f ./*.deb
apt-get download "${PKGS[@]}"
rm -rf prefix
mkdir prefix
for f in ./*.deb; do dpkg -x "$f" prefix; done
echo "unpacked into $(pwd)/prefix:"
ls ./*.deb
du -sh . | sed 's/^/total /'
