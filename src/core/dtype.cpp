#include "quill/dtype.h"

#include <array>
#include <cmath>
#include <limits>

namespace quill {

namespace {
constexpr std::array<DTypeTraits, size_t(DType::kCount)> kTraits = {{
    {"f32", 1, 4, true, false},
    {"f16", 1, 2, true, false},
    {"bf16", 1, 2, true, false},
    {"f8_e4m3", 1, 1, true, false},
    {"f8_e5m2", 1, 1, true, false},
    {"i8", 1, 1, false, false},
    {"u8", 1, 1, false, false},
    {"i16", 1, 2, false, false},
    {"i32", 1, 4, false, false},
    {"i64", 1, 8, false, false},
    {"f64", 1, 8, true, false},
    {"bool", 1, 1, false, false},
    {"q8_0", 32, 34, false, true},
    {"tq2_0_g128", 128, 34, false, true},
}};
}  // namespace

const DTypeTraits& dtype_traits(DType t) { return kTraits[size_t(t) < kTraits.size() ? size_t(t) : 0]; }

std::optional<DType> dtype_from_name(std::string_view name) {
  for (size_t i = 0; i < kTraits.size(); ++i)
    if (name == kTraits[i].name) return DType(i);
  return std::nullopt;
}

std::optional<int64_t> dtype_bytes_for(DType t, int64_t n) {
  const auto& tr = dtype_traits(t);
  if (n < 0 || n % tr.block_size != 0) return std::nullopt;
  const int64_t blocks = n / tr.block_size;
  if (blocks > std::numeric_limits<int64_t>::max() / tr.block_bytes) return std::nullopt;
  return blocks * tr.block_bytes;
}

// ---------------- f16 ----------------
float f16_to_f32(uint16_t h) {
  const uint32_t sign = uint32_t(h & 0x8000) << 16;
  const uint32_t exp = (h >> 10) & 0x1f;
  uint32_t mant = h & 0x3ff;
  if (exp == 0x1f) return f32_from_bits(sign | 0x7f800000u | (mant << 13));  // Inf / NaN (payload kept)
  if (exp == 0) {
    if (mant == 0) return f32_from_bits(sign);
    // Subnormal: value = mant * 2^-24, exactly representable in f32.
    const float v = float(mant) * 5.9604644775390625e-8f;
    return sign ? -v : v;
  }
  return f32_from_bits(sign | ((exp + 112) << 23) | (mant << 13));
}

uint16_t f32_to_f16(float f) {
  const uint32_t x = f32_bits(f);
  const uint16_t sign = uint16_t((x >> 16) & 0x8000);
  const uint32_t ax = x & 0x7fffffffu;
  if (ax >= 0x7f800000u) {  // Inf or NaN
    if (ax == 0x7f800000u) return sign | 0x7c00;
    return sign | 0x7e00 | uint16_t((ax >> 13) & 0x1ff);  // quiet NaN, keep some payload
  }
  if (ax >= 0x477ff000u) return sign | 0x7c00;  // rounds to >= 65520 -> Inf
  const int32_t e = int32_t(ax >> 23) - 127;
  if (e >= -14) {  // normal f16
    uint32_t mant = ax & 0x7fffff;
    uint32_t h = (uint32_t(e + 15) << 10) | (mant >> 13);
    const uint32_t rem = mant & 0x1fff;
    if (rem > 0x1000 || (rem == 0x1000 && (h & 1))) ++h;  // RNE; carry into exponent is correct
    return sign | uint16_t(h);
  }
  if (e < -25) return sign;  // below half the smallest subnormal -> +-0
  // Subnormal f16: value = m * 2^-24 with m in [0, 1023]; round the exact f32 to that grid.
  const uint32_t mant = (ax & 0x7fffff) | 0x800000;  // 24-bit significand, value = mant * 2^(e-23)
  const int shift = -e - 1;                          // bits to drop to land on the 2^-24 grid: (e-23) - (-24) negative
  const uint32_t m = mant >> shift;
  const uint32_t rem = mant & ((1u << shift) - 1);
  const uint32_t half = 1u << (shift - 1);
  uint32_t h = m;
  if (rem > half || (rem == half && (m & 1))) ++h;
  return sign | uint16_t(h);
}

// ---------------- bf16 ----------------
uint16_t f32_to_bf16(float f) {
  const uint32_t x = f32_bits(f);
  if ((x & 0x7fffffffu) > 0x7f800000u) return uint16_t((x >> 16) | 0x40);  // NaN stays NaN (quiet)
  const uint32_t lsb = (x >> 16) & 1;
  return uint16_t((x + 0x7fff + lsb) >> 16);
}

// ---------------- fp8 ----------------
// Generic decoder for small IEEE-like formats.
namespace {
float decode_small(uint8_t v, int exp_bits, int mant_bits, int bias) {
  const bool neg = v & 0x80;
  const int e = (v >> mant_bits) & ((1 << exp_bits) - 1);
  const int m = v & ((1 << mant_bits) - 1);
  float r;
  if (e == 0)
    r = std::ldexp(float(m), 1 - bias - mant_bits);
  else
    r = std::ldexp(float(m | (1 << mant_bits)), e - bias - mant_bits);
  return neg ? -r : r;
}

// Round |f| (finite, >= 0) to the nearest-even value of a format with `mant_bits` and minimum
// normal exponent `emin`; returns the encoded (exponent, mantissa) bits without sign, or -1 when
// it rounds beyond `max_code`.
int encode_small(float a, int mant_bits, int bias, int max_code) {
  if (a == 0.0f) return 0;
  int exp;
  std::frexp(a, &exp);  // a = f * 2^exp, f in [0.5, 1)
  int e = exp - 1;      // a = 1.x * 2^e
  const int emin = 1 - bias;
  if (e < emin) e = emin;  // subnormal range shares the minimum exponent's grid
  // Quantum at this exponent:
  const float q = std::ldexp(1.0f, e - mant_bits);
  const float n = std::nearbyint(a / q);  // default rounding mode is round-half-even
  int code;
  const int nm = int(n);
  if (nm >= (2 << mant_bits)) {  // rounded up into the next binade
    code = ((e + 1 + bias) << mant_bits);
  } else if (nm >= (1 << mant_bits)) {
    code = ((e + bias) << mant_bits) | (nm - (1 << mant_bits));
  } else {
    code = nm;  // subnormal (e == emin)
  }
  return code > max_code ? -1 : code;
}
}  // namespace

float f8e4m3_to_f32(uint8_t v) {
  if ((v & 0x7f) == 0x7f) return std::numeric_limits<float>::quiet_NaN();
  return decode_small(v, 4, 3, 7);
}

uint8_t f32_to_f8e4m3(float f) {
  const uint8_t sign = std::signbit(f) ? 0x80 : 0;
  if (std::isnan(f)) return 0x7f | sign;
  const float a = std::fabs(f);
  // e4m3fn has no Inf: like PyTorch's cast, values beyond the max saturate only through
  // rounding semantics; we saturate Inf and overflow to +-448 (0x7e), the common inference choice.
  if (std::isinf(a)) return sign | 0x7e;
  const int code = encode_small(a, 3, 7, 0x7e);
  return sign | uint8_t(code < 0 ? 0x7e : code);
}

float f8e5m2_to_f32(uint8_t v) {
  const int e = (v >> 2) & 0x1f;
  const int m = v & 3;
  if (e == 0x1f) {
    if (m == 0) return (v & 0x80) ? -std::numeric_limits<float>::infinity() : std::numeric_limits<float>::infinity();
    return std::numeric_limits<float>::quiet_NaN();
  }
  return decode_small(v, 5, 2, 15);
}

uint8_t f32_to_f8e5m2(float f) {
  const uint8_t sign = std::signbit(f) ? 0x80 : 0;
  if (std::isnan(f)) return sign | 0x7e;
  const float a = std::fabs(f);
  if (std::isinf(a)) return sign | 0x7c;
  const int code = encode_small(a, 2, 15, 0x7b);
  return sign | uint8_t(code < 0 ? 0x7c : code);  // IEEE: overflow rounds to Inf
}

bool convert_to_f32(DType src, const void* in, float* out, int64_t n) {
  switch (src) {
    case DType::kF32:
      std::memcpy(out, in, size_t(n) * 4);
      return true;
    case DType::kF16: {
      auto p = static_cast<const uint16_t*>(in);
      for (int64_t i = 0; i < n; ++i) out[i] = f16_to_f32(p[i]);
      return true;
    }
    case DType::kBF16: {
      auto p = static_cast<const uint16_t*>(in);
      for (int64_t i = 0; i < n; ++i) out[i] = bf16_to_f32(p[i]);
      return true;
    }
    case DType::kF8E4M3: {
      auto p = static_cast<const uint8_t*>(in);
      for (int64_t i = 0; i < n; ++i) out[i] = f8e4m3_to_f32(p[i]);
      return true;
    }
    case DType::kF8E5M2: {
      auto p = static_cast<const uint8_t*>(in);
      for (int64_t i = 0; i < n; ++i) out[i] = f8e5m2_to_f32(p[i]);
      return true;
    }
    case DType::kF64: {
      auto p = static_cast<const double*>(in);
      for (int64_t i = 0; i < n; ++i) out[i] = float(p[i]);
      return true;
    }
    default:
      return false;
  }
}

bool convert_from_f32(DType dst, const float* in, void* out, int64_t n) {
  switch (dst) {
    case DType::kF32:
      std::memcpy(out, in, size_t(n) * 4);
      return true;
    case DType::kF16: {
      auto p = static_cast<uint16_t*>(out);
      for (int64_t i = 0; i < n; ++i) p[i] = f32_to_f16(in[i]);
      return true;
    }
    case DType::kBF16: {
      auto p = static_cast<uint16_t*>(out);
      for (int64_t i = 0; i < n; ++i) p[i] = f32_to_bf16(in[i]);
      return true;
    }
    case DType::kF8E4M3: {
      auto p = static_cast<uint8_t*>(out);
      for (int64_t i = 0; i < n; ++i) p[i] = f32_to_f8e4m3(in[i]);
      return true;
    }
    case DType::kF8E5M2: {
      auto p = static_cast<uint8_t*>(out);
      for (int64_t i = 0; i < n; ++i) p[i] = f32_to_f8e5m2(in[i]);
      return true;
    }
    case DType::kF64: {
      auto p = static_cast<double*>(out);
      for (int64_t i = 0; i < n; ++i) p[i] = in[i];
      return true;
    }
    default:
      return false;
  }
}

}  // namespace quill
