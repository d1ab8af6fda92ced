#!/usr/bin/env bash
# Throughput of the zmm instructions Quill's GEMM kernels are built from, in cycles per pair of them,
# alone and in pairs: which ones share execution pipes, and so what a kernel's ceiling is next to
# sgemm's. Compiled here with -march=native (needs AVX-512 VNNI + BF16); runs on one core, then on
# every core at once to show whether the clock holds under load. Not part of the build.
#
#   bash scripts/bench-zmm-pipes.sh
#
# Each loop issues 24 independent instructions (no dependency chains shorter than the latency); the
# clock is timed with a chain of dependent integer adds (one per cycle on every x86 core).
set -euo pipefail
grep -q avx512_vnni /proc/cpuinfo && grep -q avx512_bf16 /proc/cpuinfo ||
  { echo "bench-zmm-pipes: needs AVX-512 VNNI and BF16" >&2; exit 2; }
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
cat >"$dir/pipes.cpp" <<'EOF'
#include <chrono>
#include <cstdio>
template <typename F> static double secs(F f) {
  const auto t0 = std::chrono::steady_clock::now();
  f();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}
constexpr long kIters = 50000000;
// 12 pairs "A src, src, acc_i" / "B src, src, acc_(12+i)": 24 instructions, none waiting on another.
#define PAIR(A, B, i, j) A " %%zmm30, %%zmm31, %%zmm" #i "\n" B " %%zmm30, %%zmm31, %%zmm" #j "\n"
#define LOOP(A, B)                                                                                         \
  secs([] {                                                                                                \
    for (long n = 0; n < kIters; ++n)                                                                      \
      asm volatile(PAIR(A, B, 0, 12) PAIR(A, B, 1, 13) PAIR(A, B, 2, 14) PAIR(A, B, 3, 15)                 \
                       PAIR(A, B, 4, 16) PAIR(A, B, 5, 17) PAIR(A, B, 6, 18) PAIR(A, B, 7, 19)             \
                           PAIR(A, B, 8, 20) PAIR(A, B, 9, 21) PAIR(A, B, 10, 22) PAIR(A, B, 11, 23)       \
                   :: : "xmm0", "xmm1", "xmm2", "xmm3", "xmm4", "xmm5", "xmm6", "xmm7", "xmm8", "xmm9",   \
                     "xmm10", "xmm11", "xmm12", "xmm13", "xmm14", "xmm15", "xmm16", "xmm17", "xmm18",      \
                     "xmm19", "xmm20", "xmm21", "xmm22", "xmm23");                                         \
  })
int main() {
  asm volatile("vpxord %%zmm30, %%zmm30, %%zmm30\n vpxord %%zmm31, %%zmm31, %%zmm31" ::: "xmm30", "xmm31");
  const double add_chain = secs([] {
    for (long n = 0; n < 250000000; ++n) asm volatile("add $1, %%rax\n add $1, %%rax\n add $1, %%rax\n add $1, %%rax" ::: "rax");
  });
  const double ghz = 1e9 / add_chain / 1e9;  // 1e9 dependent adds
  const double cyc = 12.0 * kIters / (ghz * 1e9);  // seconds per cycle-per-pair
  struct { const char* name; double t; } rows[] = {
      {"vfmadd231ps", LOOP("vfmadd231ps", "vfmadd231ps")},
      {"vpdpbusd", LOOP("vpdpbusd", "vpdpbusd")},
      {"vdpbf16ps", LOOP("vdpbf16ps", "vdpbf16ps")},
      {"vaddps", LOOP("vaddps", "vaddps")},
      {"vpdpbusd + vfmadd231ps", LOOP("vpdpbusd", "vfmadd231ps")},
      {"vpdpbusd + vaddps", LOOP("vpdpbusd", "vaddps")},
      {"vpdpbusd + vpaddd", LOOP("vpdpbusd", "vpaddd")},
      {"vfmadd231ps + vaddps", LOOP("vfmadd231ps", "vaddps")},
  };
  std::printf("clock %.2f GHz\n%-24s %s\n", ghz, "instructions (zmm)", "cycles per pair");
  for (const auto& r : rows) std::printf("%-24s %.2f\n", r.name, r.t / cyc);
}
EOF
g++ -O2 -march=native -o "$dir/pipes" "$dir/pipes.cpp"
echo "# $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), $(date -u +%F)"
echo "## one core"
"$dir/pipes"
echo "## all $(nproc) cores at once (the first core's report)"
for _ in $(seq 2 "$(nproc)"); do "$dir/pipes" >/dev/null & done
"$dir/pipes"
wait
