#!/usr/bin/env bash
# One command for a GPU machine (written for an H200, sm_90a): lean CUDA build, GPU tests, a
# memory check of the kernels, a fault-injection run of the CLI, Quill's GPU benchmark, PyTorch on
# the same shapes, and one table at the end.
#
# The machine reaches no package registry: run scripts/fetch-device-debs.sh first where apt works,
# and carry .debs with the tree. Typical device call (from the repository root):
#   bash scripts/device-check.sh            # everything, ~5-8 minutes on 16 cores
# Environment knobs:
#   QUILL_DEB_PREFIX   unpacked .deb prefix (default .debs/prefix); added to CMAKE_PREFIX_PATH
#   QUILL_CUDA_GENCODE nvcc targets (default -gencode=arch=compute_90a,code=sm_90a)
#   BUILD              build folder (default build/device)     JOBS  parallel jobs (default nproc)
#   SKIP_SANITIZER=1   skip compute-sanitizer                  SKIP_TORCH=1  skip the PyTorch baseline
#   OUT                folder for logs (the device tool's $OUT when set, else $BUILD/logs)
# Exit status: 0 when the build and every GPU test passed (benchmarks never fail the check).
set -uo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUILD=${BUILD:-$ROOT/build/device}
PREFIX=${QUILL_DEB_PREFIX:-$ROOT/.debs/prefix}
GENCODE=${QUILL_CUDA_GENCODE:--gencode=arch=compute_90a,code=sm_90a}
JOBS=${JOBS:-$(nproc 2>/dev/null || echo 4)}
LOGS=${OUT:-$BUILD/logs}
mkdir -p "$BUILD" "$LOGS"
SUMMARY=()
FAILED=0
note() { SUMMARY+=("$1"); echo "== $1"; }
section() { echo; echo "######## $1"; }

section "machine"
nvidia-smi -L 2>&1 || echo "nvidia-smi: not available"
NVCC=$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)
"$NVCC" --version 2>&1 | tail -1
cmake --version | head -1
echo "jobs $JOBS, prefix $PREFIX, gencode $GENCODE"

section "configure"
PREFIX_PATHS="$PREFIX/usr"
[ -d "$PREFIX/usr" ] || { echo "note: $PREFIX/usr missing; relying on system packages"; PREFIX_PATHS=""; }
GEN=()
command -v ninja >/dev/null && GEN=(-G Ninja)
if ! cmake -S "$ROOT" -B "$BUILD" "${GEN[@]}" -DCMAKE_BUILD_TYPE=Release -DQUILL_CUDA=ON \
    "-DQUILL_CUDA_GENCODE=$GENCODE" -DCMAKE_CUDA_COMPILER="$NVCC" -DQUILL_BUILD_BENCH=ON \
    -DCMAKE_PREFIX_PATH="$PREFIX_PATHS" >"$LOGS/configure.log" 2>&1; then
  tail -30 "$LOGS/configure.log"
  note "configure: FAILED (see configure.log)"
  printf '%s\n' "${SUMMARY[@]}"
  exit 1
fi
grep "quill:" "$LOGS/configure.log"
note "configure: ok"

section "build"
TARGETS=(quill quill_tests)
grep -q "quill_bench_cuda" "$BUILD/build.ninja" "$BUILD/Makefile" 2>/dev/null && TARGETS+=(quill_bench_cuda)
if ! cmake --build "$BUILD" -j "$JOBS" --target "${TARGETS[@]}" >"$LOGS/build.log" 2>&1; then
  grep -E "error|Error" "$LOGS/build.log" | head -40
  note "build: FAILED (see build.log)"
  printf '%s\n' "${SUMMARY[@]}"
  exit 1
fi
note "build: ok (${TARGETS[*]})"
TESTS="$BUILD/tests/quill_tests"

section "GPU tests"
# CudaBackendNoDevice skips when a device exists; any other skip means the GPU was not seen.
GPU_FILTER='*Cuda*:*Tq2Layout*:*Fallback*:*GpuPolicy*:-CudaBackendNoDevice.*'
"$TESTS" --gtest_filter="$GPU_FILTER" --gtest_color=no 2>&1 | tee "$LOGS/gpu_tests.log" | grep -E "^\[  (FAILED|SKIPPED|PASSED) |agreement|\[device\]|Failure|Expected|Which is|actual" | head -120
if grep -q "^\[  PASSED  \]" "$LOGS/gpu_tests.log" && ! grep -q "^\[  FAILED  \]" "$LOGS/gpu_tests.log"; then
  if grep -q "^\[  SKIPPED \]" "$LOGS/gpu_tests.log"; then
    note "GPU tests: passed but some SKIPPED (no device seen?)"
    FAILED=1
  else
    note "GPU tests: all passed ($(grep -c '^\[       OK \]' "$LOGS/gpu_tests.log") tests)"
  fi
else
  note "GPU tests: FAILED: $(grep '^\[  FAILED  \] .*\.' "$LOGS/gpu_tests.log" | sed 's/\[  FAILED  \] //' | tr '\n' ' ')"
  FAILED=1
fi

section "whole suite (CPU tests too)"
"$TESTS" --gtest_brief=1 --gtest_color=no >"$LOGS/all_tests.log" 2>&1
note "whole suite: $(grep -E '^\[  (PASSED|FAILED) ' "$LOGS/all_tests.log" | tr '\n' ' ')"

section "compute-sanitizer (memcheck) on the kernels"
SAN=$(command -v compute-sanitizer || ls /usr/local/cuda/bin/compute-sanitizer 2>/dev/null || true)
if [ -n "${SKIP_SANITIZER:-}" ] || [ -z "$SAN" ]; then
  note "memcheck: skipped"
else
  timeout 240 "$SAN" --tool memcheck --error-exitcode 9 "$TESTS" \
    --gtest_filter='*CudaLinear*:*CudaTernary*:*CudaAttention*:*CudaNorms*:*CudaActivations*' >"$LOGS/memcheck.log" 2>&1
  rc=$?
  tail -5 "$LOGS/memcheck.log"
  case $rc in
    0) note "memcheck: clean" ;;
    124) note "memcheck: timed out (240 s)" ;;
    *) note "memcheck: ERRORS (rc $rc, see memcheck.log)"; FAILED=1 ;;
  esac
fi

section "fault injection through the CLI (tiny SD3 fixture)"
FIX="$ROOT/tests/fixtures/sd3/tiny"
for env in "" "QUILL_FAULT_INJECT=attention,linear" "QUILL_GPU=0"; do
  echo "-- ${env:-default}"
  env $env QUILL_LOG=info "$BUILD/quill" forward --model "$FIX" --inputs "$FIX/inputs.safetensors" \
    -o "$BUILD/forward_out.safetensors" --device auto --diag 2>&1 | grep -E "device:|^linear|^attention|warn|error" | head -12
done

section "Quill GPU benchmark"
: >"$LOGS/bench_quill.log"
if [ -x "$BUILD/quill_bench_cuda" ]; then
  timeout 300 "$BUILD/quill_bench_cuda" 2>&1 | tee "$LOGS/bench_quill.log" | grep -v "^CSV,"
  note "quill bench: rc ${PIPESTATUS[0]}"
else
  note "quill bench: not built"
fi

section "PyTorch baseline"
: >"$LOGS/bench_torch.log"
if [ -z "${SKIP_TORCH:-}" ] && command -v python3 >/dev/null; then
  PYTHONUNBUFFERED=1 timeout 300 python3 "$ROOT/tools/bench_torch_cuda.py" 2>&1 | tee "$LOGS/bench_torch.log" | grep -v "^CSV,"
  note "torch bench: rc ${PIPESTATUS[0]}"
else
  note "torch bench: skipped"
fi

section "results"
cat "$LOGS/bench_quill.log" "$LOGS/bench_torch.log" | grep "^CSV," >"$LOGS/bench.csv"
python3 - "$LOGS/bench.csv" <<'PY' || column -t -s, "$LOGS/bench.csv"
import re, sys
rows = [l.rstrip("\n").split(",")[1:] for l in open(sys.argv[1]) if l.count(",") >= 6]
def key(op, shape):
    kind = "graph" if "graph" in op else "eager" if "eager" in op else ""
    return re.sub(r"\s*\(.*\)", "", shape), kind
torch_ms = {key(op, shape): float(ms) for src, op, shape, ms, *_ in rows if src == "torch"}
print("%-7s %-34s %-24s %10s %10s %-9s %12s" % ("source", "op", "shape", "ms", "rate", "unit", "torch/this"))
for src, op, shape, ms, rate, unit in sorted(rows, key=lambda r: (key(r[1], r[2]), r[0] != "torch", r[1])):
    t = torch_ms.get(key(op, shape))
    ratio = "%.2fx" % (t / float(ms)) if t and src != "torch" else ""
    print("%-7s %-34s %-24s %10.4f %10s %-9s %12s" % (src, op, re.sub(r"\s*\(.*\)", "", shape), float(ms), rate, unit, ratio))
PY
echo
printf '%s\n' "${SUMMARY[@]}"
exit $FAILED
