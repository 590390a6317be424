#pragma once
// Scalar conversions between f32 and the 16-bit float formats (f16: IEEE binary16; bf16:
// the top 16 bits of an f32). Widening is exact; narrowing rounds to nearest even and
// keeps inf and NaN (a NaN stays a NaN: its quiet bit is set, so dropping mantissa bits
// cannot turn it into inf). The kernels' conversions (F16C, AVX-512, NEON, and the plain
// variant's branch-free one in ops/kernels/simd.h) give the same floats.

#include <cstdint>
#include <cstring>

namespace vm {

inline float bits_to_f32(uint32_t b) {
  float f;
  std::memcpy(&f, &b, 4);
  return f;
}

inline uint32_t f32_to_bits(float f) {
  uint32_t b;
  std::memcpy(&b, &f, 4);
  return b;
}

inline float bf16_to_f32(uint16_t h) { return bits_to_f32(uint32_t(h) << 16); }

inline float f16_to_f32(uint16_t h) {
  const uint32_t sign = uint32_t(h & 0x8000) << 16, exp = (h >> 10) & 0x1f, man = h & 0x3ff;
  if (exp == 0x1f) return bits_to_f32(sign | 0x7f800000u | (man << 13));
  if (exp != 0) return bits_to_f32(sign | ((exp + 112) << 23) | (man << 13));
  // Zero or subnormal: man * 2^-24, exact in f32.
  const float mag = float(man) * (1.0f / 16777216.0f);
  return sign ? -mag : mag;
}

inline uint16_t f32_to_bf16(float f) {
  const uint32_t b = f32_to_bits(f);
  if ((b & 0x7fffffffu) > 0x7f800000u) return uint16_t((b >> 16) | 0x40);  // NaN: quiet
  return uint16_t((b + 0x7fffu + ((b >> 16) & 1)) >> 16);  // ties to even; overflow gives inf
}

inline uint16_t f32_to_f16(float f) {
  const uint32_t b = f32_to_bits(f);
  const uint16_t sign = uint16_t((b >> 16) & 0x8000);
  const uint32_t abs = b & 0x7fffffffu;
  if (abs > 0x7f800000u) return uint16_t(sign | 0x7e00 | ((abs >> 13) & 0x3ff));  // NaN: quiet
  if (abs >= 0x477ff000u) return uint16_t(sign | 0x7c00);  // >= 65520 rounds to inf
  if (abs < 0x38800000u) {
    // Below 2^-14: a subnormal half, man = round(|f| * 2^24) to nearest even. Adding
    // 0.5 (2^-1) in f32 makes the FPU do that rounding: the sum's low bits are man.
    const float r = bits_to_f32(abs) + 0.5f;
    return uint16_t(sign | (f32_to_bits(r) - 0x3f000000u));
  }
  // Normal: rebias the exponent, round the 13 dropped bits to nearest even (a carry
  // into the exponent is the correct result, up to inf at the top).
  const uint32_t m = abs + ((uint32_t(15 - 127) << 23)) + 0xfffu + ((abs >> 13) & 1);
  return uint16_t(sign | (m >> 13));
}

}  // namespace vm
