// VPDPBUSD that accumulates in place, for the AVX-512 files only (*_avx512.cpp). GCC 12 lowers
// _mm512_dpbusd_epi32 to a register copy, the dot product and a copy back per call; with a
// register file full of accumulators that doubles the instructions and spills some every
// iteration (measured: the exact int8 kernel at 1.0x sgemm with the intrinsic, 1.4x with this).
#pragma once

#include <immintrin.h>

namespace quill::quant::detail::avx512 {

// acc += per 32-bit lane, sum over 4 bytes of (a as u8) * (b as s8).
inline __m512i dpbusd(__m512i acc, __m512i a, __m512i b) {
  asm("vpdpbusd %2, %1, %0" : "+v"(acc) : "v"(a), "v"(b));
  return acc;
}

}  // namespace quill::quant::detail::avx512
