// The array conversions (SIMD where the CPU has it) against the scalar reference in half.h:
// bit-identical on every 16-bit pattern (signaling FP16 NaNs may come back quieted) and on floats spread over every exponent, NaN included.
#include <gtest/gtest.h>

#include <vector>

#include "runtime/base/half.h"
#include "runtime/base/half_array.h"

namespace precis {
namespace {

TEST(HalfArray, WidenEveryPattern) {
  std::vector<uint16_t> bits(65536 + 3);  // odd length: the scalar tail runs too
  for (size_t i = 0; i < bits.size(); ++i) bits[i] = uint16_t(i);
  std::vector<float> h(bits.size()), b(bits.size());
  HalfToFloatArray(bits.data(), h.data(), bits.size());
  Bf16ToFloatArray(bits.data(), b.data(), bits.size());
  for (size_t i = 0; i < bits.size(); ++i) {
    float want = HalfToFloat(bits[i]);
    if (want != want) {  // F16C quiets signaling NaNs: NaN with the same sign and payload bits
      ASSERT_TRUE(h[i] != h[i]) << "f16 pattern " << i;
      ASSERT_EQ(FloatBits(h[i]) | 0x00400000u, FloatBits(want) | 0x00400000u) << "f16 pattern " << i;
      continue;
    }
    ASSERT_EQ(FloatBits(h[i]), FloatBits(want)) << "f16 pattern " << i;
    ASSERT_EQ(FloatBits(b[i]), FloatBits(Bf16ToFloat(bits[i]))) << "bf16 pattern " << i;
  }
}

TEST(HalfArray, NarrowMatchesScalar) {
  // Every 251st float bit pattern (all exponents, both signs, subnormals, inf, NaNs), plus ties.
  std::vector<float> x;
  for (uint64_t u = 0; u <= 0xffffffffull; u += 251) x.push_back(BitsFloat(uint32_t(u)));
  for (uint32_t u : {0x33000000u, 0x33000001u, 0x387fe000u, 0x477fefffu, 0x477ff000u, 0x3f808000u, 0x3f818000u, 0x7f800001u, 0xff800000u})
    x.push_back(BitsFloat(u));
  x.push_back(1.0f);  // odd length
  std::vector<uint16_t> h(x.size()), b(x.size());
  FloatToHalfArray(x.data(), h.data(), x.size());
  FloatToBf16Array(x.data(), b.data(), x.size());
  for (size_t i = 0; i < x.size(); ++i) {
    ASSERT_EQ(h[i], FloatToHalf(x[i])) << "f16 of bits " << std::hex << FloatBits(x[i]);
    ASSERT_EQ(b[i], FloatToBf16(x[i])) << "bf16 of bits " << std::hex << FloatBits(x[i]);
  }
}

}  // namespace
}  // namespace precis
