#!/usr/bin/env bash
# Installs every Debian package Quill needs to build, test and run. Idempotent: packages already
# present are skipped, and apt-get is only called when something is missing. Debian only.
set -euo pipefail

PACKAGES=(
  # toolchain
  build-essential cmake ninja-build pkg-config clang libclang-rt-14-dev
  # tests and benchmarks; SIMDe runs the AVX-512 kernels on AVX2 CPUs (scripts/test-avx512-emulated.sh)
  libgtest-dev libgmock-dev libbenchmark-dev libsimde-dev
  # core: JSON configs, command line
  nlohmann-json3-dev libcli11-dev
  # dense CPU GEMM and conv
  libopenblas-dev libdnnl-dev
  # images
  libpng-dev libjpeg62-turbo-dev
  # glyph-line rendering and the default fonts
  libfreetype-dev libharfbuzz-dev fonts-dejavu-core
  # text encoders' tokenizers: Unicode normalisation and regex
  libicu-dev
  # HTTP server, and its tests: a venv for schemathesis / selenium, a headless browser
  libcpp-httplib-dev python3-venv chromium chromium-driver
)

# `--line-training`: also what tools/line_data.py, tools/train_line_model.py and tools/eval_cer.py
# need from Debian (handwriting fonts, the Swedish word list, Tesseract with Swedish).
if [ "${1:-}" = "--line-training" ]; then
  PACKAGES+=(fonts-bwht fonts-joscelyn fonts-dancingscript fonts-humor-sans fonts-dkg-handwriting fonts-breip
             fonts-femkeklaver fonts-klee fonts-kristi fonts-ecolier-court fonts-comic-neue fonts-kaushanscript
             fonts-leckerli-one fonts-lobster fonts-tomsontalks fonts-sjfonts fonts-yusei-magic fonts-urw-base35
             wswedish tesseract-ocr tesseract-ocr-swe)
fi

missing=()
for p in "${PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "setup: all ${#PACKAGES[@]} Debian packages present"
  exit 0
fi

SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
echo "setup: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
