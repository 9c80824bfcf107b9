// Array routines over the approximations of fast_math.h. Each is cloned for AVX2 and for the
// baseline ISA (GCC/clang target_clones, chosen once at load by the dynamic linker), without
// FMA so that every clone computes bit-identical results. The loops are kept free of branches
// so that the compiler vectorizes them; the reductions use fixed lane counts for the same reason.
#include "runtime/cpu/kernels/fast_math.h"

#include <cmath>
#include <cstring>

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
  // GCC vector types: written as plain lane arrays, the select and the NaN flag stayed scalar.
  // NaN shows as the largest |bits|: (bits & 0x7fffffff) > 0x7f800000 only for NaN.
  typedef float V8 __attribute__((vector_size(32)));
  typedef int32_t I8 __attribute__((vector_size(32)));
  V8 m = {-INFINITY, -INFINITY, -INFINITY, -INFINITY, -INFINITY, -INFINITY, -INFINITY, -INFINITY};
  I8 top = {0, 0, 0, 0, 0, 0, 0, 0};
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    V8 v;
    std::memcpy(&v, x + i, sizeof v);
    m = v > m ? v : m;
    I8 b = reinterpret_cast<I8>(v) & 0x7fffffff;
    top = b > top ? b : top;
  }
  float best = -INFINITY;
  int32_t t = 0;
  for (int k = 0; k < 8; ++k) {
    best = m[k] > best ? m[k] : best;
    t = top[k] > t ? top[k] : t;
  }
  for (; i < n; ++i) {
    float v = x[i];
    int32_t b;
    std::memcpy(&b, &v, sizeof b);
    best = v > best ? v : best;
    t = (b & 0x7fffffff) > t ? (b & 0x7fffffff) : t;
  }
  *any_nan = t > 0x7f800000;
  return best;
}

PRECIS_CLONES void MaxPoolInto(float* acc, const float* x, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    float v = x[i], b = acc[i];
    acc[i] = (v > b || (b != b && v == v)) ? v : b;
  }
}

PRECIS_CLONES void AddInto(float* acc, const float* x, int64_t n) {
  for (int64_t i = 0; i < n; ++i) acc[i] += x[i];
}

PRECIS_CLONES float DotF32(const float* a, const float* b, int64_t n) {
  constexpr int kLanes = 16;
  float acc[kLanes] = {};
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes)
    for (int k = 0; k < kLanes; ++k) acc[k] += a[i + k] * b[i + k];
  for (int k = 0; i < n; ++i, ++k) acc[k] += a[i] * b[i];
  float s = 0;
  for (float v : acc) s += v;
  return s;
}

PRECIS_CLONES void AxpyF32(float* y, float s, const float* x, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] += s * x[i];
}

PRECIS_CLONES double ExpShiftSum(const float* x, float m, float* e, int64_t n) {
  constexpr int kLanes = 8;
  double acc[kLanes] = {};
  auto one = [&](int64_t i) { return ExpOfDifference(x[i], m); };
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

PRECIS_CLONES void ScaleByDouble(const float* e, double inv, float* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = float(double(e[i]) * inv);
}

// BatchNormalization's gradient (fast_train.cc): sums over 16 double lanes, so that the AVX2
// clone keeps four independent vector chains of adds.
namespace {
constexpr int kStatLanes = 16;
}

PRECIS_CLONES void SumAndCenteredDot16(const float* g, const float* x, int64_t n, double mean, double* sum, double* dot) {
  double sg[kStatLanes] = {}, sd[kStatLanes] = {};
  int64_t i = 0;
  for (; i + kStatLanes <= n; i += kStatLanes)
    for (int k = 0; k < kStatLanes; ++k) {
      double gv = double(g[i + k]);
      sg[k] += gv;
      sd[k] += gv * (double(x[i + k]) - mean);
    }
  for (int k = 0; i < n; ++i, ++k) {
    double gv = double(g[i]);
    sg[k] += gv;
    sd[k] += gv * (double(x[i]) - mean);
  }
  double a = 0, b = 0;
  for (int k = 0; k < kStatLanes; ++k) a += sg[k], b += sd[k];
  *sum += a;
  *dot += b;
}

PRECIS_CLONES void BatchNormGradArray(const float* g, const float* x, double a, double b, double c, float* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = float(a * double(g[i]) + b * double(x[i]) + c);
}

PRECIS_CLONES void BatchNormGradArrayF(const float* g, const float* x, float a, float b, float mean, float c, float* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = a * g[i] + b * (x[i] - mean) + c;
}

}  // namespace precis::rt::fast
