// Branch-free float approximations of exp, erf, tanh and sigmoid for the fast kernels, written
// as plain scalar code that GCC and clang vectorize (selects instead of branches, integer
// exponent arithmetic instead of ldexp), and the array routines built from them.
//
// Accuracy, measured against double-precision libm over dense grids (2^21 points) in
// fast_kernels_test.cc, which also enforces the bounds stated there:
//   ExpApprox      Cephes-style: Cody-Waite reduction to r in [-ln2/2, ln2/2], degree-7
//                  polynomial; max relative error 8.1e-8 (about 1 ulp) on [-87, 88.5], gradual
//                  underflow to 0 below -103.97, +inf above 88.72, NaN kept.
//   ErfApprox      |x| < 0.921875: x + x * P5(x^2); below 3.925: 1 - exp(P8(|x|)), P8 fitted
//                  to log(erfc); above: +-1. Max absolute error 8.2e-8 (half an ulp of 1: 6e-8).
//   TanhApprox     |x| < 0.625: x + x^3 * P5(x^2); else 1 - 2 / (exp(2|x|) + 1). Max relative
//                  error 1.4e-7.
//   SigmoidApprox  1 / (1 + e) or e / (1 + e) with e = exp(-|x|). Max relative error 1.9e-7.
// The polynomial coefficients were fitted (minimax, Lawson iterations in double) for this file.
// Results do not depend on the vector width: each element sees the same IEEE operations.
#pragma once

#include <bit>
#include <cstdint>

namespace precis::rt::fast {

// exp(hi + lo), |lo| tiny against |hi| (lo carries the rounding error of a subtraction).
inline float ExpApprox(float hi, float lo = 0.0f) {
  // Clamp without the NaN (comparisons with NaN are false): NaN is restored at the end.
  float x = hi > -104.0f ? hi : -104.0f;
  x = x < 89.0f ? x : 89.0f;
  // n = round(x / ln2) by the 1.5 * 2^23 trick; the low mantissa bits of `shifted` hold n.
  const float kShift = 12582912.0f;
  float shifted = x * 1.44269504088896341f + kShift;
  float n = shifted - kShift;
  int32_t ni = std::bit_cast<int32_t>(shifted) - std::bit_cast<int32_t>(kShift);
  // r = x - n ln2 in two steps (0.693359375 has 9 significant bits, so n * it is exact).
  float r = (x - n * 0.693359375f) - n * -2.12194440e-4f + lo;
  float p = 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  p = p * (r * r) + r + 1.0f;
  // 2^n as two normal powers of two (n in [-150, 129]), so that tiny results underflow
  // gradually and large ones overflow to infinity.
  int32_t n1 = ni >> 1, n2 = ni - n1;
  float y = p * std::bit_cast<float>((n1 + 127) << 23) * std::bit_cast<float>((n2 + 127) << 23);
  return hi != hi ? hi : y;
}

inline float ErfApprox(float x) {
  float t = x < 0 ? -x : x, s = x * x;
  // Small: erf(x) / x - 1 = P(x^2).
  float q = -6.013395613990724e-4f;
  q = q * s + 4.998001269996166e-3f;
  q = q * s + -2.6770232245326042e-2f;
  q = q * s + 1.1281926929950714e-1f;
  q = q * s + -3.761250674724579e-1f;
  q = q * s + 1.2837915122509003e-1f;
  float small = x + x * q;
  // Large: log(erfc(t)) = P(t).
  float r = 1.6306565839840914e-6f;
  r = r * t + -4.589370291796513e-5f;
  r = r * t + 5.951123312115669e-4f;
  r = r * t + -4.750201478600502e-3f;
  r = r * t + 2.639024518430233e-2f;
  r = r * t + -1.1001826077699661e-1f;
  r = r * t + -6.318997144699097e-1f;
  r = r * t + -1.1301857233047485f;
  r = r * t + 3.0721063376404345e-4f;
  float big = 1.0f - ExpApprox(r < 0.0f ? r : 0.0f);
  big = t < 3.925f ? big : 1.0f;
  big = x < 0 ? -big : big;
  float y = t < 0.921875f ? small : big;
  return x != x ? x : y;
}

inline float TanhApprox(float x) {
  float t = x < 0 ? -x : x, s = x * x;
  float q = 2.299918094649911e-3f;
  q = q * s + -8.351053111255169e-3f;
  q = q * s + 2.1771403029561043e-2f;
  q = q * s + -5.3959619253873825e-2f;
  q = q * s + 1.3333305716514587e-1f;
  q = q * s + -3.333333432674408e-1f;
  float small = x + x * s * q;
  float big = 1.0f - 2.0f / (ExpApprox(2.0f * t) + 1.0f);
  big = x < 0 ? -big : big;
  float y = t < 0.625f ? small : big;
  return x != x ? x : y;
}

inline float SigmoidApprox(float x) {
  float e = ExpApprox(x < 0 ? x : -x);  // exp(-|x|) <= 1: never overflows
  float inv = 1.0f / (1.0f + e);
  return x < 0 ? e * inv : inv;
}

// Array routines (fast_math.cc), each compiled for AVX2 and for the baseline ISA; y may equal x.
void ExpArray(const float* x, float* y, int64_t n);
void ErfArray(const float* x, float* y, int64_t n);
void TanhArray(const float* x, float* y, int64_t n);
void SigmoidArray(const float* x, float* y, int64_t n);
// Gelu in the reference kernel's float formula, erf or tanh form.
void GeluErfArray(const float* x, float* y, int64_t n);
void GeluTanhArray(const float* x, float* y, int64_t n);
// Softmax helpers: e[i] = exp(x[i] - m) with the subtraction's rounding error compensated;
// returns sum(e) accumulated in double. max(x) is returned by RowMax, with *any_nan set when
// x holds a NaN (max ignores NaN).
double ExpShiftSum(const float* x, float m, float* e, int64_t n);
float RowMax(const float* x, int64_t n, bool* any_nan);

}  // namespace precis::rt::fast
