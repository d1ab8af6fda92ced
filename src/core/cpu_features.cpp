#include "core/cpu_features.h"

#include <cstdlib>
#include <cstring>

#if defined(__x86_64__) || defined(_M_X64)
#include <cpuid.h>
#define QUILL_X86 1
#endif

namespace quill {

namespace {

#ifdef QUILL_X86
uint64_t xgetbv0() {
  uint32_t eax, edx;
  __asm__ volatile("xgetbv" : "=a"(eax), "=d"(edx) : "c"(0));
  return (uint64_t(edx) << 32) | eax;
}
#endif

CpuFeatures detect() {
  CpuFeatures f;
#ifdef QUILL_X86
  unsigned a, b, c, d;
  if (!__get_cpuid(1, &a, &b, &c, &d)) return f;
  const bool osxsave = c & (1u << 27);
  const uint64_t xcr0 = osxsave ? xgetbv0() : 0;
  const bool ymm_os = (xcr0 & 0x6) == 0x6;
  const bool zmm_os = ymm_os && (xcr0 & 0xe0) == 0xe0;
  f.fma = ymm_os && (c & (1u << 12));
  f.f16c = ymm_os && (c & (1u << 29));
  if (__get_cpuid_count(7, 0, &a, &b, &c, &d)) {
    f.avx2 = ymm_os && (b & (1u << 5));
    f.avx512f = zmm_os && (b & (1u << 16));
    f.avx512dq = zmm_os && (b & (1u << 17));
    f.avx512bw = zmm_os && (b & (1u << 30));
    f.avx512vl = zmm_os && (b & (1u << 31));
    f.avx512vnni = zmm_os && (c & (1u << 11));
    const bool tile_os = (xcr0 & (3ull << 17)) == (3ull << 17);
    f.amx_bf16 = tile_os && (d & (1u << 22));
    f.amx_tile = tile_os && (d & (1u << 24));
    f.amx_int8 = tile_os && (d & (1u << 25));
    unsigned a1, b1, c1, d1;
    if (__get_cpuid_count(7, 1, &a1, &b1, &c1, &d1)) {
      f.avx_vnni = ymm_os && (a1 & (1u << 4));
      f.avx512bf16 = zmm_os && (a1 & (1u << 5));
    }
  }
#endif
  return f;
}

int env_cap() {
  static const int cap = [] {
    const char* e = std::getenv("QUILL_CPU_ISA");
    if (!e) return -1;
    if (!std::strcmp(e, "scalar")) return int(CpuIsa::kScalar);
    if (!std::strcmp(e, "avx2")) return int(CpuIsa::kAvx2);
    if (!std::strcmp(e, "avx512")) return int(CpuIsa::kAvx512);
    return -1;
  }();
  return cap;
}

}  // namespace

const CpuFeatures& cpu_features() {
  static const CpuFeatures f = detect();
  return f;
}

CpuIsa isa_for_features(const CpuFeatures& f) {
  if (f.avx512f && f.avx512bw && f.avx512vl && f.avx512dq && f.avx512vnni && f.avx512bf16 && f.fma && f.f16c)
    return CpuIsa::kAvx512;
  if (f.avx2 && f.fma && f.f16c) return CpuIsa::kAvx2;
  return CpuIsa::kScalar;
}

CpuIsa cpu_hardware_isa() {
#if defined(QUILL_EMULATE_AVX512)
  // The emulation test build: the AVX-512 kernels are AVX2 code (core/avx512_intrinsics.h).
  // cpu_features() stays the hardware's, so nothing else (OpenBLAS's core, AMX) acts on this.
  if (isa_for_features(cpu_features()) == CpuIsa::kAvx2) return CpuIsa::kAvx512;
#endif
  return isa_for_features(cpu_features());
}

bool cpu_avx512_emulated() {
#if defined(QUILL_EMULATE_AVX512)
  return true;
#else
  return false;
#endif
}

CpuIsa cpu_isa() {
  const int level = int(cpu_hardware_isa()), cap = env_cap();
  return CpuIsa(cap >= 0 && cap < level ? cap : level);
}

const char* cpu_isa_name(CpuIsa isa) {
  switch (isa) {
    case CpuIsa::kScalar:
      return "scalar";
    case CpuIsa::kAvx2:
      return "avx2";
    case CpuIsa::kAvx512:
      return "avx512";
  }
  return "?";
}

std::string cpu_features_string() {
  const auto& f = cpu_features();
  std::string s = std::string("isa=") + cpu_isa_name(cpu_isa());
#if defined(QUILL_EMULATE_AVX512)
  s += " (avx512 emulated)";
#endif
  auto add = [&](bool on, const char* n) {
    if (on) {
      s += ' ';
      s += n;
    }
  };
  add(f.avx2, "avx2");
  add(f.fma, "fma");
  add(f.f16c, "f16c");
  add(f.avx512f, "avx512f");
  add(f.avx512bw, "avx512bw");
  add(f.avx512vl, "avx512vl");
  add(f.avx512vnni, "avx512vnni");
  add(f.avx512bf16, "avx512bf16");
  add(f.avx_vnni, "avx_vnni");
  add(f.amx_tile, "amx");
  return s;
}

}  // namespace quill
