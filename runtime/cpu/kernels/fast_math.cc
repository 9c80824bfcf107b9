// Array routines over the approximations of fast_math.h. Each is cloned for AVX2 and for the
// baseline ISA (GCC/clang target_clones, chosen once at load by the dynamic linker), without
// FMA so that every clone computes bit-identical results. The loops are kept free of branches
// so that the compiler vectorizes them; the reductions use fixed lane counts for the same reason.
#include "runtime/cpu/kernels/fast_math.h"

#include <cmath>

// ThreadSanitizer builds (tests/runtime/tsan_concurrency.sh) get the baseline only: the dynamic
// linker runs the clones' ifunc resolvers before the TSan runtime is initialized, and the
// instrumented resolvers crash there.
#if defined(__SANITIZE_THREAD__)
#define PRECIS_CLONES
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define PRECIS_CLONES
#endif
#endif
#ifndef PRECIS_CLONES
#define PRECIS_CLONES __attribute__((target_clones("avx2", "default")))
#endif

namespace precis::rt::fast {

PRECIS_CLONES void ExpArray(const float* x, float* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = ExpApprox(x[i]);
}

PRECIS_CLONES void ErfArray(const float* x, float* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = ErfApprox(x[i]);
}

PRECIS_CLONES void TanhArray(const float* x, float* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = TanhApprox(x[i]);
}

PRECIS_CLONES void SigmoidArray(const float* x, float* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = SigmoidApprox(x[i]);
}

PRECIS_CLONES void GeluErfArray(const float* x, float* y, int64_t n) {
  approx::FloatOps o;
  for (int64_t i = 0; i < n; ++i) y[i] = approx::GeluErf(o, x[i]);
}

PRECIS_CLONES void GeluTanhArray(const float* x, float* y, int64_t n) {
  approx::FloatOps o;
  for (int64_t i = 0; i < n; ++i) y[i] = approx::GeluTanh(o, x[i]);
}

PRECIS_CLONES float RowMax(const float* x, int64_t n, bool* any_nan) {
  constexpr int kLanes = 16;
  float m[kLanes];
  int nan[kLanes];
  for (int k = 0; k < kLanes; ++k) {
    m[k] = -INFINITY;
    nan[k] = 0;
  }
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes)
    for (int k = 0; k < kLanes; ++k) {
      float v = x[i + k];
      m[k] = v > m[k] ? v : m[k];
      nan[k] |= v != v;
    }
  for (int k = 0; i < n; ++i, ++k) {
    float v = x[i];
    m[k] = v > m[k] ? v : m[k];
    nan[k] |= v != v;
  }
  float best = m[0];
  int any = nan[0];
  for (int k = 1; k < kLanes; ++k) {
    best = m[k] > best ? m[k] : best;
    any |= nan[k];
  }
  *any_nan = any != 0;
  return best;
}

PRECIS_CLONES double ExpShiftSum(const float* x, float m, float* e, int64_t n) {
  constexpr int kLanes = 8;
  double acc[kLanes] = {};
  auto one = [&](int64_t i) {
    // d + lo = x - m exactly (Knuth's TwoSum), so exp sees the exact difference: a rounded d
    // alone would cost |x - m| * 2^-24 of relative error, 1e-6 at a distance of 16.
    // Where exp underflows anyway (x = -inf included, whose lo is NaN) lo is dropped.
    float v = x[i], d = v - m, bb = d - v, lo = (v - (d - bb)) + (-m - bb);
    return ExpApprox(d, d > -104.0f ? lo : 0.0f);
  };
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes)
    for (int k = 0; k < kLanes; ++k) {
      float v = one(i + k);
      e[i + k] = v;
      acc[k] += double(v);
    }
  for (int k = 0; i < n; ++i, ++k) {
    float v = one(i);
    e[i] = v;
    acc[k] += double(v);
  }
  double sum = 0;
  for (double a : acc) sum += a;
  return sum;
}

}  // namespace precis::rt::fast
