// Conversions between float and the 16-bit formats IEEE binary16 (FP16) and bfloat16 (BF16),
// rounding to nearest even, with NaN kept NaN and overflow going to infinity. Header-only so
// that kernels and the compiler share exactly one definition of the rounding.
#pragma once

#include <cstdint>
#include <cstring>

namespace precis {

inline uint32_t FloatBits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}
inline float BitsFloat(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

inline float HalfToFloat(uint16_t h) {
  uint32_t sign = uint32_t(h & 0x8000) << 16;
  uint32_t exp = (h >> 10) & 0x1f;
  uint32_t man = h & 0x3ff;
  if (exp == 0x1f) return BitsFloat(sign | 0x7f800000u | (man << 13));  // inf / nan
  if (exp == 0) {
    if (man == 0) return BitsFloat(sign);
    // Subnormal: value = man * 2^-24.
    float v = float(man) * (1.0f / 16777216.0f);
    return sign ? -v : v;
  }
  return BitsFloat(sign | ((exp + 112) << 23) | (man << 13));
}

inline uint16_t FloatToHalf(float f) {
  uint32_t u = FloatBits(f);
  uint32_t sign = (u >> 16) & 0x8000;
  uint32_t abs = u & 0x7fffffffu;
  if (abs > 0x7f800000u) return uint16_t(sign | 0x7e00 | ((abs >> 13) & 0x3ff));  // nan
  if (abs >= 0x477ff000u) return uint16_t(sign | 0x7c00);  // rounds to >= 65520: inf
  if (abs < 0x38800000u) {
    // Result is subnormal (or zero): round abs * 2^24 to an integer, nearest even.
    if (abs < 0x33000000u) return uint16_t(sign);  // below half the smallest subnormal
    // value = man * 2^(exp - 150); the subnormal unit is 2^-24, so shift right by 126 - exp.
    uint32_t exp = abs >> 23;
    uint32_t man = (abs & 0x7fffff) | 0x800000;
    uint32_t s = 126 - exp;  // 14..24 here
    uint32_t q = man >> s;
    uint32_t rem = man & ((1u << s) - 1);
    uint32_t halfway = 1u << (s - 1);
    if (rem > halfway || (rem == halfway && (q & 1))) ++q;
    return uint16_t(sign | q);
  }
  // Normal: rebias exponent and round the low 13 mantissa bits to nearest even.
  uint32_t r = abs - 0x38000000u;  // exponent 127 -> 15
  uint32_t lsb = (r >> 13) & 1;
  r += 0xfff + lsb;
  return uint16_t(sign | (r >> 13));
}

inline float Bf16ToFloat(uint16_t b) { return BitsFloat(uint32_t(b) << 16); }

inline uint16_t FloatToBf16(float f) {
  uint32_t u = FloatBits(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return uint16_t((u >> 16) | 0x40);  // quiet nan
  uint32_t lsb = (u >> 16) & 1;
  u += 0x7fff + lsb;
  return uint16_t(u >> 16);
}

}  // namespace precis
