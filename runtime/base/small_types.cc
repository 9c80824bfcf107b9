// Conversions of the 8-, 4- and 2-bit types (see small_types.h).
#include "runtime/base/small_types.h"

#include <cmath>
#include <cstring>

namespace precis {
namespace {

struct Format {
  int exp_bits, man_bits, bias;
  double max;
  bool has_inf, nan_is_0x80, negative_zero;
};

bool FormatOf(DataType t, Format& f) {
  switch (t) {
    case DataType::kF8E4M3FN: f = {4, 3, 7, 448.0, false, false, true}; return true;
    case DataType::kF8E4M3FNUZ: f = {4, 3, 8, 240.0, false, true, false}; return true;
    case DataType::kF8E5M2: f = {5, 2, 15, 57344.0, true, false, true}; return true;
    case DataType::kF8E5M2FNUZ: f = {5, 2, 16, 57344.0, false, true, false}; return true;
    case DataType::kF4E2M1: f = {2, 1, 1, 6.0, false, false, true}; return true;
    default: return false;
  }
}

uint8_t NanOf(DataType t) {
  switch (t) {
    case DataType::kF8E4M3FN: return 0x7F;
    case DataType::kF8E5M2: return 0x7F;
    case DataType::kF4E2M1: return 0x8;  // no NaN: ml_dtypes gives -0
    default: return 0x80;                // the FNUZ types
  }
}

uint8_t EncodeFloat(DataType t, const Format& f, double x, bool saturate) {
  if (std::isnan(x)) return NanOf(t);
  int sign_shift = f.exp_bits + f.man_bits;
  uint8_t sign = std::signbit(x) ? uint8_t(1u << sign_shift) : 0;
  double a = std::fabs(x);
  bool clamp = saturate || t == DataType::kF4E2M1;  // float4 has neither Inf nor NaN: it always clamps
  auto too_large = [&]() { return f.has_inf ? uint8_t(sign | (((1u << f.exp_bits) - 1) << f.man_bits)) : NanOf(t); };
  if (std::isinf(a)) {
    if (!clamp) return too_large();
    a = f.max;
  } else if (a > f.max && clamp) {
    a = f.max;  // saturate_cast clips before converting
  }
  int emin = 1 - f.bias;
  double v = 0;
  if (a > 0) {
    int e = 0;
    std::frexp(a, &e);
    e -= 1;  // a = m * 2^e with m in [1, 2)
    if (e < emin) e = emin;
    double quantum = std::ldexp(1.0, e - f.man_bits);
    v = std::nearbyint(a / quantum) * quantum;  // ties to even (the default rounding mode)
  }
  if (v > f.max) {
    if (!clamp) return too_large();
    v = f.max;
  }
  if (v == 0) return f.negative_zero ? sign : 0;
  uint32_t exp = 0, man = 0;
  if (v < std::ldexp(1.0, emin)) {
    man = uint32_t(v / std::ldexp(1.0, emin - f.man_bits));
  } else {
    int e = 0;
    std::frexp(v, &e);
    e -= 1;
    exp = uint32_t(e + f.bias);
    man = uint32_t(v / std::ldexp(1.0, e - f.man_bits)) - (1u << f.man_bits);
  }
  return uint8_t(sign | (exp << f.man_bits) | man);
}

// ONNX's to_float8e8m0 on the float32 value's bits.
uint8_t EncodeE8M0(double x, bool saturate, E8M0Rounding rounding) {
  float xf = float(x);
  uint32_t bits;
  std::memcpy(&bits, &xf, 4);
  uint32_t exponent = (bits >> 23) & 0xFF;
  if (exponent == 0xFF) return 0xFF;
  bool up = false;
  if (rounding == E8M0Rounding::kNearest) {
    bool g = bits & 0x400000, r = bits & 0x200000, s = bits & 0x1FFFFF, lsb = exponent > 0;
    up = g && (r || s || lsb);
  } else if (rounding == E8M0Rounding::kUp) {
    up = (bits & 0x7FFFFF) != 0;
  }
  if (up && saturate && exponent == 0xFE) up = false;
  return uint8_t(exponent + (up ? 1 : 0));
}

}  // namespace

bool IsSmallType(DataType t) {
  switch (t) {
    case DataType::kF8E4M3FN: case DataType::kF8E4M3FNUZ: case DataType::kF8E5M2: case DataType::kF8E5M2FNUZ:
    case DataType::kU4: case DataType::kI4: case DataType::kF4E2M1: case DataType::kF8E8M0: case DataType::kU2: case DataType::kI2:
      return true;
    default:
      return false;
  }
}

int PackedBits(DataType t) {
  switch (t) {
    case DataType::kU4: case DataType::kI4: case DataType::kF4E2M1: return 4;
    case DataType::kU2: case DataType::kI2: return 2;
    default: return 8;
  }
}

double SmallToDouble(DataType t, uint8_t v) {
  switch (t) {
    case DataType::kU4: return double(v & 0xF);
    case DataType::kU2: return double(v & 0x3);
    case DataType::kI4: return double(int((v & 0xF) ^ 0x8) - 8);
    case DataType::kI2: return double(int((v & 0x3) ^ 0x2) - 2);
    case DataType::kF8E8M0: return v == 0xFF ? std::nan("") : std::ldexp(1.0, int(v) - 127);
    default: break;
  }
  Format f;
  if (!FormatOf(t, f)) return 0;
  if (f.nan_is_0x80 && v == 0x80) return std::nan("");
  int total = f.exp_bits + f.man_bits;
  v &= uint8_t((1u << (total + 1)) - 1);
  bool negative = (v >> total) & 1;
  uint32_t exp = (v >> f.man_bits) & ((1u << f.exp_bits) - 1), man = v & ((1u << f.man_bits) - 1);
  uint32_t exp_max = (1u << f.exp_bits) - 1;
  double value;
  if (t == DataType::kF8E4M3FN && exp == exp_max && man == (1u << f.man_bits) - 1) return std::nan("");
  if (f.has_inf && exp == exp_max) {
    if (man != 0) return std::nan("");
    value = INFINITY;
  } else if (exp == 0) {
    value = std::ldexp(double(man), 1 - f.bias - f.man_bits);
  } else {
    value = std::ldexp(1.0 + double(man) / double(1u << f.man_bits), int(exp) - f.bias);
  }
  return negative ? -value : value;
}

uint8_t SmallFromDouble(DataType t, double x, bool saturate, E8M0Rounding rounding) {
  switch (t) {
    case DataType::kU4: case DataType::kI4: case DataType::kU2: case DataType::kI2: {
      int64_t i = std::isfinite(x) && std::fabs(x) < 9.2e18 ? int64_t(std::trunc(x)) : 0;
      bool four = t == DataType::kU4 || t == DataType::kI4;
      uint8_t low = uint8_t(i & (four ? 0xF : 0x3));
      if (t == DataType::kI4) return uint8_t(int8_t((low ^ 0x8) - 0x8));
      if (t == DataType::kI2) return uint8_t(int8_t((low ^ 0x2) - 0x2));
      return low;
    }
    case DataType::kF8E8M0:
      return EncodeE8M0(x, saturate, rounding);
    default:
      break;
  }
  Format f;
  if (!FormatOf(t, f)) return 0;
  return EncodeFloat(t, f, x, saturate);
}

void UnpackSubByte(DataType t, const uint8_t* packed, int64_t n, uint8_t* out) {
  int bits = PackedBits(t);
  for (int64_t i = 0; i < n; ++i) {
    int64_t bit = i * bits;
    uint8_t v = uint8_t((packed[bit / 8] >> (bit % 8)) & ((1u << bits) - 1));
    if (t == DataType::kI4) v = uint8_t(int8_t((v ^ 0x8) - 0x8));
    if (t == DataType::kI2) v = uint8_t(int8_t((v ^ 0x2) - 0x2));
    out[i] = v;
  }
}

}  // namespace precis
