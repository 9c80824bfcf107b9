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

#include <cstdint>

#include "runtime/kernels/approx_math.h"

namespace precis::rt::fast {

// The approximations themselves live in runtime/kernels/approx_math.h, written once over an
// operation policy so that the fused-kernel interpreter and the code generator compute them with
// the same IEEE operations in the same order; here they are evaluated on floats.
// exp(hi + lo), |lo| tiny against |hi| (lo carries the rounding error of a subtraction).
inline float ExpApprox(float hi, float lo = 0.0f) {
  approx::FloatOps o;
  return approx::Exp(o, hi, lo);
}
// exp(v - m) of the exact difference: d + lo = v - m (Knuth's TwoSum), so exp sees the exact
// difference (a rounded d alone would cost |v - m| * 2^-24 of relative error, 1e-6 at a distance
// of 16). Where exp underflows anyway (v = -inf included, whose lo is NaN) lo is dropped.
inline float ExpOfDifference(float v, float m) {
  float d = v - m, bb = d - v, lo = (v - (d - bb)) + (-m - bb);
  return ExpApprox(d, d > -104.0f ? lo : 0.0f);
}
inline float ErfApprox(float x) {
  approx::FloatOps o;
  return approx::Erf(o, x);
}
inline float TanhApprox(float x) {
  approx::FloatOps o;
  return approx::Tanh(o, x);
}
inline float SigmoidApprox(float x) {
  approx::FloatOps o;
  return approx::Sigmoid(o, x);
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
// Softmax's normalization: y[i] = float(double(e[i]) * inv), as the scalar loop computes it (y may
// equal e).
void ScaleByDouble(const float* e, double inv, float* y, int64_t n);
float RowMax(const float* x, int64_t n, bool* any_nan);
// BatchNormalization's gradient sums in double over 16 lanes (their order differs from the
// reference's; the kernel's test bounds the difference): *sum += sum(g), *dot += sum(g * (x - mean)).
void SumAndCenteredDot16(const float* g, const float* x, int64_t n, double mean, double* sum, double* dot);
// BatchNormalization's dX: y = float(a * g + b * x + c) in double (f32 steps), or
// y = a * g + b * (x - mean) + c in float (16-bit steps: within a 16-bit ulp of the double form,
// the centered x keeping b * x and c from cancelling).
void BatchNormGradArray(const float* g, const float* x, double a, double b, double c, float* y, int64_t n);
void BatchNormGradArrayF(const float* g, const float* x, float a, float b, float mean, float c, float* y, int64_t n);
// Pools over channel rows (fast_nhwc_pool.cc): acc[i] = x[i] when x[i] > acc[i], or when acc[i]
// is NaN and x[i] is not (the reference MaxPool's rule); acc[i] += x[i].
void MaxPoolInto(float* acc, const float* x, int64_t n);
// sum_i a[i] * b[i] in 16 partial sums added at the end (FP32; HalfWeightsGemv).
float DotF32(const float* a, const float* b, int64_t n);
// y[0, n) += s * x[0, n).
void AxpyF32(float* y, float s, const float* x, int64_t n);
void AddInto(float* acc, const float* x, int64_t n);

}  // namespace precis::rt::fast
