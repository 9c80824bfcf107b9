// Tests of the FP16 and BF16 conversions in runtime/base/half.h against independent references:
// decoding works from the bit fields in double precision, and rounding picks the nearest
// representable value by comparing distances in double, breaking ties towards an even mantissa.
// Every check is exact (bit for bit): the conversions promise correct rounding, so there is no
// tolerance to state.
#include "runtime/base/half.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cinttypes>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <random>
#include <string>
#include <vector>

namespace precis {
namespace {

// A 16-bit float format described by its field widths: binary16 (5, 10) or bfloat16 (8, 7).
struct Format {
  const char* name;
  int exponent_bits;
  int mantissa_bits;
  uint16_t (*from_float)(float);
  float (*to_float)(uint16_t);

  int bias() const { return (1 << (exponent_bits - 1)) - 1; }
  uint16_t inf_bits() const { return uint16_t(((1u << exponent_bits) - 1) << mantissa_bits); }
};

const Format kHalf = {"f16", 5, 10, FloatToHalf, HalfToFloat};
const Format kBf16 = {"bf16", 8, 7, FloatToBf16, Bf16ToFloat};

// Reference decoding of a 16-bit pattern straight from its fields, in double.
double Decode(const Format& f, uint16_t bits) {
  bool negative = bits >> 15;
  int exponent = (bits >> f.mantissa_bits) & ((1 << f.exponent_bits) - 1);
  int mantissa = bits & ((1 << f.mantissa_bits) - 1);
  int max_exponent = (1 << f.exponent_bits) - 1;
  double magnitude;
  if (exponent == max_exponent) {
    magnitude = mantissa == 0 ? std::numeric_limits<double>::infinity()
                              : std::numeric_limits<double>::quiet_NaN();
  } else if (exponent == 0) {
    // Subnormal: mantissa * 2^(1 - bias - mantissa_bits).
    magnitude = std::ldexp(double(mantissa), 1 - f.bias() - f.mantissa_bits);
  } else {
    magnitude = std::ldexp(double((1 << f.mantissa_bits) + mantissa),
                           exponent - f.bias() - f.mantissa_bits);
  }
  return negative ? -magnitude : magnitude;
}

bool IsNaNBits(const Format& f, uint16_t bits) { return (bits & 0x7fff) > f.inf_bits(); }

std::string Hex(uint32_t v) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "0x%08" PRIx32, v);
  return buf;
}

// Reference rounding: the non-negative finite patterns of a format are ordered like their
// values, so the nearest one to |x| is found by binary search and a distance comparison.
class NearestReference {
 public:
  explicit NearestReference(const Format& f) : format_(f) {
    for (uint32_t b = 0; b < f.inf_bits(); ++b) {
      values_.push_back(Decode(f, uint16_t(b)));
      patterns_.push_back(uint16_t(b));
    }
    // One step past the largest finite value, at the same spacing: the value that rounds to
    // infinity. Its pattern is the infinity pattern, whose mantissa is even.
    double top = values_.back(), below = values_[values_.size() - 2];
    values_.push_back(top + (top - below));
    patterns_.push_back(f.inf_bits());
  }

  uint16_t Round(float x) const {
    uint16_t sign = std::signbit(x) ? 0x8000 : 0;
    if (std::isnan(x)) return 0;  // callers check NaN separately
    double a = std::fabs(double(x));
    if (a >= values_.back()) return sign | format_.inf_bits();
    // hi: first value > a; lo: the one below (<= a).
    size_t hi = size_t(std::upper_bound(values_.begin(), values_.end(), a) - values_.begin());
    size_t lo = hi - 1;
    // Both distances are exact: lo <= a < hi <= 2 * lo (Sterbenz), or lo == 0 where a - lo is
    // exact and hi - a, if rounded, still exceeds a.
    double d_lo = a - values_[lo], d_hi = values_[hi] - a;
    size_t pick;
    if (d_lo < d_hi)
      pick = lo;
    else if (d_hi < d_lo)
      pick = hi;
    else
      pick = (patterns_[lo] & 1) == 0 ? lo : hi;
    return sign | patterns_[pick];
  }

 private:
  const Format& format_;
  std::vector<double> values_;
  std::vector<uint16_t> patterns_;
};

// Checks format.from_float(x) against the reference; returns false (after one failure
// message) so that loops over many inputs stop at the first mismatch.
bool CheckRound(const Format& f, const NearestReference& ref, float x) {
  uint16_t got = f.from_float(x);
  if (std::isnan(x)) {
    bool ok = IsNaNBits(f, got) && (got >> 15) == (FloatBits(x) >> 31);
    EXPECT_TRUE(ok) << f.name << ": NaN input " << Hex(FloatBits(x)) << " gave " << Hex(got)
                    << ", expected a NaN of the same sign";
    return ok;
  }
  uint16_t want = ref.Round(x);
  EXPECT_EQ(got, want) << f.name << ": rounding " << Hex(FloatBits(x)) << " (" << double(x)
                       << "): got " << Hex(got) << " = " << Decode(f, got) << ", nearest is "
                       << Hex(want) << " = " << Decode(f, want);
  return got == want;
}

void CheckDecodeAllPatterns(const Format& f) {
  for (uint32_t b = 0; b <= 0xffff; ++b) {
    uint16_t bits = uint16_t(b);
    float got = f.to_float(bits);
    double want = Decode(f, bits);
    if (std::isnan(want)) {
      ASSERT_TRUE(std::isnan(got)) << f.name << " " << Hex(b);
      ASSERT_EQ(std::signbit(got), bool(b >> 15)) << f.name << " " << Hex(b);
      continue;
    }
    ASSERT_EQ(double(got), want) << f.name << " " << Hex(b);
    ASSERT_EQ(std::signbit(got), bool(b >> 15)) << f.name << " " << Hex(b) << ": sign of zero";
  }
}

// Every finite pattern decodes to a float that converts back to the same pattern.
void CheckAllPatternsRoundTrip(const Format& f, const NearestReference& ref) {
  for (uint32_t b = 0; b <= 0xffff; ++b) {
    if (IsNaNBits(f, uint16_t(b))) continue;
    float x = float(Decode(f, uint16_t(b)));
    ASSERT_EQ(f.from_float(x), uint16_t(b)) << f.name << " " << Hex(b);
    ASSERT_TRUE(CheckRound(f, ref, x));
  }
}

// Midpoints between consecutive finite values (exact in float: one more significant bit than
// the format), and the floats just below and above each: ties and near-ties.
void CheckMidpoints(const Format& f, const NearestReference& ref) {
  for (uint32_t b = 0; b + 1 < f.inf_bits(); ++b) {
    double lo = Decode(f, uint16_t(b)), hi = Decode(f, uint16_t(b + 1));
    float mid = float((lo + hi) / 2);
    ASSERT_EQ(double(mid), (lo + hi) / 2) << "midpoint not exact in float";
    for (float sign : {1.0f, -1.0f}) {
      float m = sign * mid;
      ASSERT_TRUE(CheckRound(f, ref, m));
      ASSERT_TRUE(CheckRound(f, ref, std::nextafter(m, 0.0f)));
      ASSERT_TRUE(CheckRound(f, ref, std::nextafter(m, sign * INFINITY)));
    }
    // The tie must go to the even pattern.
    uint16_t even = (b & 1) ? uint16_t(b + 1) : uint16_t(b);
    ASSERT_EQ(f.from_float(mid), even)
        << f.name << " tie between " << Hex(b) << " and " << Hex(b + 1);
  }
}

// A sparse sweep over all 2^32 float patterns (a prime stride hits every exponent and many
// mantissas) plus random patterns from a fixed seed.
void CheckSweepAndRandom(const Format& f, const NearestReference& ref) {
  constexpr uint64_t kStride = 4099;
  for (uint64_t u = 0; u <= 0xffffffffull; u += kStride)
    ASSERT_TRUE(CheckRound(f, ref, BitsFloat(uint32_t(u))));
  std::mt19937_64 rng(20240611);
  for (int i = 0; i < 1000000; ++i) ASSERT_TRUE(CheckRound(f, ref, BitsFloat(uint32_t(rng()))));
}

TEST(HalfTest, DecodesEveryPattern) { CheckDecodeAllPatterns(kHalf); }

TEST(HalfTest, KnownValues) {
  // Spot values written out by hand, independent of both the code and the reference.
  EXPECT_EQ(HalfToFloat(0x3c00), 1.0f);
  EXPECT_EQ(HalfToFloat(0xc000), -2.0f);
  EXPECT_EQ(HalfToFloat(0x7bff), 65504.0f);
  EXPECT_EQ(HalfToFloat(0x0400), 6.103515625e-05f);         // smallest normal, 2^-14
  EXPECT_EQ(HalfToFloat(0x0001), 5.9604644775390625e-08f);  // smallest subnormal, 2^-24
  EXPECT_EQ(HalfToFloat(0x3555), 0.333251953125f);
  EXPECT_EQ(FloatToHalf(1.0f / 3.0f), 0x3555);
  EXPECT_EQ(FloatToHalf(0.1f), 0x2e66);
  EXPECT_EQ(FloatToHalf(-0.0f), 0x8000);
  EXPECT_EQ(FloatToHalf(INFINITY), 0x7c00);
  EXPECT_EQ(FloatToHalf(-INFINITY), 0xfc00);
}

TEST(HalfTest, AllHalvesRoundTrip) {
  NearestReference ref(kHalf);
  CheckAllPatternsRoundTrip(kHalf, ref);
}

TEST(HalfTest, MidpointsRoundToNearestEven) {
  NearestReference ref(kHalf);
  CheckMidpoints(kHalf, ref);
}

TEST(HalfTest, OverflowThreshold) {
  NearestReference ref(kHalf);
  // 65520 is the midpoint between 65504 (odd mantissa) and 65536: the tie goes to infinity.
  EXPECT_EQ(FloatToHalf(65520.0f), 0x7c00);
  EXPECT_EQ(FloatToHalf(-65520.0f), 0xfc00);
  EXPECT_EQ(FloatToHalf(std::nextafter(65520.0f, 0.0f)), 0x7bff);
  EXPECT_EQ(FloatToHalf(65504.0f), 0x7bff);
  EXPECT_EQ(FloatToHalf(65536.0f), 0x7c00);
  EXPECT_EQ(FloatToHalf(std::numeric_limits<float>::max()), 0x7c00);
  for (float x : {65504.0f, 65519.0f, 65520.0f, 65521.0f, 70000.0f, 1e10f,
                  std::nextafter(65520.0f, 0.0f), std::nextafter(65520.0f, INFINITY)}) {
    EXPECT_TRUE(CheckRound(kHalf, ref, x));
    EXPECT_TRUE(CheckRound(kHalf, ref, -x));
  }
}

TEST(HalfTest, SubnormalRange) {
  NearestReference ref(kHalf);
  // Every float from 2^-26 up to 2^-14 (the half subnormal range and the band that rounds into
  // it), at a stride of 61 patterns, plus the exact boundaries.
  for (uint32_t u = 0x32800000u; u <= 0x38800000u; u += 61) {
    ASSERT_TRUE(CheckRound(kHalf, ref, BitsFloat(u)));
    ASSERT_TRUE(CheckRound(kHalf, ref, -BitsFloat(u)));
  }
  // Half the smallest subnormal (2^-25) ties to zero; just above it rounds up.
  EXPECT_EQ(FloatToHalf(std::ldexp(1.0f, -25)), 0x0000);
  EXPECT_EQ(FloatToHalf(std::nextafter(std::ldexp(1.0f, -25), 1.0f)), 0x0001);
  EXPECT_EQ(FloatToHalf(-std::ldexp(1.0f, -25)), 0x8000);
  // 1.5 * 2^-24 ties to the even 2 * 2^-24.
  EXPECT_EQ(FloatToHalf(1.5f * std::ldexp(1.0f, -24)), 0x0002);
  // Just below the smallest normal rounds up into it.
  EXPECT_EQ(FloatToHalf(std::nextafter(std::ldexp(1.0f, -14), 0.0f)), 0x0400);
  // Float subnormals are far below half range.
  EXPECT_EQ(FloatToHalf(BitsFloat(0x00000001u)), 0x0000);
  EXPECT_EQ(FloatToHalf(BitsFloat(0x807fffffu)), 0x8000);
  for (uint32_t u = 0; u < 0x00800000u; u += 8191)
    ASSERT_TRUE(CheckRound(kHalf, ref, BitsFloat(u)));
}

TEST(HalfTest, NaNStaysNaN) {
  NearestReference ref(kHalf);
  for (uint32_t payload : {1u, 2u, 0x1fffu, 0x2000u, 0x400000u, 0x7fffffu, 0x12345u}) {
    EXPECT_TRUE(CheckRound(kHalf, ref, BitsFloat(0x7f800000u | payload)));
    EXPECT_TRUE(CheckRound(kHalf, ref, BitsFloat(0xff800000u | payload)));
  }
}

TEST(HalfTest, SweepAndRandomFloats) {
  NearestReference ref(kHalf);
  CheckSweepAndRandom(kHalf, ref);
  // Random values concentrated in the half range, where the rounding decisions are.
  std::mt19937 rng(7);
  std::uniform_int_distribution<uint32_t> in_range(0x32000000u, 0x48000000u);
  for (int i = 0; i < 1000000; ++i) {
    uint32_t u = in_range(rng) | (rng() & 0x80000000u);
    ASSERT_TRUE(CheckRound(kHalf, ref, BitsFloat(u)));
  }
}

TEST(Bf16Test, DecodesEveryPattern) { CheckDecodeAllPatterns(kBf16); }

TEST(Bf16Test, KnownValues) {
  EXPECT_EQ(Bf16ToFloat(0x3f80), 1.0f);
  EXPECT_EQ(Bf16ToFloat(0xc000), -2.0f);
  EXPECT_EQ(Bf16ToFloat(0x7f7f), 3.3895313892515355e38f);
  EXPECT_EQ(Bf16ToFloat(0x0001), 9.183549615799121e-41f);  // 2^-133
  EXPECT_EQ(FloatToBf16(1.0f / 3.0f), 0x3eab);
  EXPECT_EQ(FloatToBf16(0.1f), 0x3dcd);
  EXPECT_EQ(FloatToBf16(-0.0f), 0x8000);
  EXPECT_EQ(FloatToBf16(-INFINITY), 0xff80);
}

TEST(Bf16Test, AllBf16RoundTrip) {
  NearestReference ref(kBf16);
  CheckAllPatternsRoundTrip(kBf16, ref);
}

TEST(Bf16Test, MidpointsRoundToNearestEven) {
  NearestReference ref(kBf16);
  CheckMidpoints(kBf16, ref);
}

TEST(Bf16Test, OverflowThreshold) {
  NearestReference ref(kBf16);
  // The midpoint between the largest bf16 (odd mantissa) and 2^128 ties to infinity; every
  // float above it, up to FLT_MAX, overflows too.
  float mid = float((Decode(kBf16, 0x7f7f) + std::ldexp(1.0, 128)) / 2);
  EXPECT_EQ(FloatToBf16(mid), 0x7f80);
  EXPECT_EQ(FloatToBf16(std::nextafter(mid, 0.0f)), 0x7f7f);
  EXPECT_EQ(FloatToBf16(std::numeric_limits<float>::max()), 0x7f80);
  EXPECT_EQ(FloatToBf16(-std::numeric_limits<float>::max()), 0xff80);
  for (float x : {mid, std::nextafter(mid, 0.0f), std::numeric_limits<float>::max()})
    EXPECT_TRUE(CheckRound(kBf16, ref, x));
}

TEST(Bf16Test, SubnormalsAndNaN) {
  NearestReference ref(kBf16);
  for (uint32_t u = 0; u <= 0x00900000u; u += 37) {
    ASSERT_TRUE(CheckRound(kBf16, ref, BitsFloat(u)));
    ASSERT_TRUE(CheckRound(kBf16, ref, BitsFloat(u | 0x80000000u)));
  }
  // NaNs whose payload sits only in the low 16 bits must not truncate to infinity.
  for (uint32_t payload : {1u, 0x8000u, 0xffffu, 0x10000u, 0x400000u, 0x7fffffu}) {
    EXPECT_TRUE(CheckRound(kBf16, ref, BitsFloat(0x7f800000u | payload)));
    EXPECT_TRUE(CheckRound(kBf16, ref, BitsFloat(0xff800000u | payload)));
  }
}

TEST(Bf16Test, SweepAndRandomFloats) {
  NearestReference ref(kBf16);
  CheckSweepAndRandom(kBf16, ref);
}

}  // namespace
}  // namespace precis
