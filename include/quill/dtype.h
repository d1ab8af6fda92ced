// Element types, including block-quantized ones, and exact scalar conversions.
#pragma once

#include <cstdint>
#include <cstring>
#include <optional>
#include <string_view>

namespace quill {

enum class DType : uint8_t {
  kF32 = 0,
  kF16,
  kBF16,
  kF8E4M3,  // OCP fp8 e4m3fn: no infinities, 0x7f/0xff are NaN, max 448
  kF8E5M2,  // OCP fp8 e5m2: IEEE-like, has infinities
  kI8,
  kU8,
  kI16,
  kI32,
  kI64,
  kF64,
  kBool,
  // Block-quantized types: a row of K elements is K / block_size blocks of block_bytes.
  kQ8_0,        // ggml q8_0: 32 x int8 + f16 scale (34 bytes)
  kTQ2_0_G128,  // ternary: 128 x 2-bit codes (32 bytes) + f16 scale = 34 bytes
  kCount,
};

struct DTypeTraits {
  const char* name;     // canonical lower-case name: "f32", "bf16", "tq2_0_g128"
  int64_t block_size;   // elements per block (1 for scalar types)
  int64_t block_bytes;  // bytes per block (element size for scalar types)
  bool is_float;        // f32/f16/bf16/fp8/f64: can be converted element-wise to float
  bool is_quantized;    // block types
};

const DTypeTraits& dtype_traits(DType t);
inline const char* dtype_name(DType t) { return dtype_traits(t).name; }
std::optional<DType> dtype_from_name(std::string_view name);  // accepts canonical names

// Bytes needed for `n` elements; nullopt if n is not a multiple of the block size or overflows.
std::optional<int64_t> dtype_bytes_for(DType t, int64_t n);

// ---- exact scalar conversions (round-to-nearest-even; NaN/Inf preserved where representable) ----
inline uint32_t f32_bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}
inline float f32_from_bits(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

float f16_to_f32(uint16_t h);
uint16_t f32_to_f16(float f);
inline float bf16_to_f32(uint16_t b) { return f32_from_bits(uint32_t(b) << 16); }
uint16_t f32_to_bf16(float f);
float f8e4m3_to_f32(uint8_t v);
uint8_t f32_to_f8e4m3(float f);  // saturates finite overflow to +-448, NaN -> 0x7f, Inf -> +-448? see dtype.cpp
float f8e5m2_to_f32(uint8_t v);
uint8_t f32_to_f8e5m2(float f);

// Convert `n` elements of a scalar float type to f32 / from f32. Returns false for types that are
// not element-wise floats (ints and block types are handled by their own code).
bool convert_to_f32(DType src, const void* in, float* out, int64_t n);
bool convert_from_f32(DType dst, const float* in, void* out, int64_t n);

}  // namespace quill
