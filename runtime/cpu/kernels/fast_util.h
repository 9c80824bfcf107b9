// Helpers shared by the fast (non-oneDNN) CPU kernels in fast_*.cc: an OpenMP parallel loop over
// contiguous chunks, block-wise float conversion for 16-bit storage types, and the registration
// helpers RegisterFastKernels calls.
//
// The fast kernels keep the reference kernels' semantics (same dtypes, same float compute type,
// Store<T> rounding) and differ only in loop structure, threading and, where a file says so,
// polynomial approximations with a measured error bound (fast_kernels_test.cc). They are built
// with OpenMP, -O3 and -fno-trapping-math (CMakeLists.txt), so plain branch-free loops vectorize;
// only the fast_*.cc files may include this header.
#pragma once

#include <omp.h>

#include <algorithm>
#include <cstdint>
#include <type_traits>

#include "runtime/base/half_array.h"
#include "runtime/cpu/kernels/common.h"

namespace precis::rt::fast {

// Below this many elements of work a step runs on the calling thread: a parallel region costs
// a few microseconds, as much as ~30K simple element operations.
constexpr int64_t kParallelMin = 32 * 1024;

// Calls fn(begin, end) on contiguous chunks covering [0, n), one chunk per thread. `cost` is the
// work per item in element operations; the loop goes parallel (up to `threads`) only when
// n * cost reaches kParallelMin, and never gives a thread less than kParallelMin / 2 of work.
template <typename Fn>
void ParallelFor(int64_t n, int64_t cost, int threads, Fn&& fn) {
  int64_t work = n * std::max<int64_t>(cost, 1);
  int64_t by_work = work / (kParallelMin / 2);
  int t = int(std::clamp<int64_t>(std::min<int64_t>(by_work, n), 1, std::max(threads, 1)));
  if (t <= 1 || work < kParallelMin) {
    if (n > 0) fn(int64_t(0), n);
    return;
  }
#pragma omp parallel num_threads(t)
  {
    int64_t i = omp_get_thread_num(), nt = omp_get_num_threads();
    int64_t begin = n * i / nt, end = n * (i + 1) / nt;
    if (begin < end) fn(begin, end);
  }
}

// Double-precision sums over float rows in kLanes independent lanes (so the loops vectorize
// without reassociation), combined at the end.
constexpr int kLanes = 8;

// sum(x) in double.
inline double SumDouble(const float* x, int64_t n) {
  double acc[kLanes] = {};
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes)
    for (int k = 0; k < kLanes; ++k) acc[k] += double(x[i + k]);
  for (int k = 0; i < n; ++i, ++k) acc[k] += double(x[i]);
  double s = 0;
  for (double a : acc) s += a;
  return s;
}

// sum((x - mean)^2) in double.
inline double SquaredDeviations(const float* x, int64_t n, double mean) {
  double acc[kLanes] = {};
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes)
    for (int k = 0; k < kLanes; ++k) {
      double d = double(x[i + k]) - mean;
      acc[k] += d * d;
    }
  for (int k = 0; i < n; ++i, ++k) {
    double d = double(x[i]) - mean;
    acc[k] += d * d;
  }
  double s = 0;
  for (double a : acc) s += a;
  return s;
}

// sum(g * (x - mean)) in double.
inline double CenteredDot(const float* g, const float* x, int64_t n, double mean) {
  double acc[kLanes] = {};
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes)
    for (int k = 0; k < kLanes; ++k) acc[k] += double(g[i + k]) * (double(x[i + k]) - mean);
  for (int k = 0; i < n; ++i, ++k) acc[k] += double(g[i]) * (double(x[i]) - mean);
  double s = 0;
  for (double a : acc) s += a;
  return s;
}

// Elements per block when 16-bit data is converted to float for a float-only routine.
constexpr int64_t kBlock = 256;

// y[0, n) = Load(x[0, n)) and x[0, n) = Store<T>(y[0, n)) for a 16-bit T, as whole arrays: the
// conversions of runtime/base/half_array.h (F16C where the CPU has it; bit-identical to Load and
// Store<T> but for the payload of signaling NaNs), where a per-element Load is a scalar routine.
template <typename T>
void WidenArray(const T* x, float* y, int64_t n) {
  static_assert(sizeof(T) == 2);
  if constexpr (std::is_same_v<T, Half>) HalfToFloatArray(reinterpret_cast<const uint16_t*>(x), y, size_t(n));
  else Bf16ToFloatArray(reinterpret_cast<const uint16_t*>(x), y, size_t(n));
}
template <typename T>
void NarrowArray(const float* x, T* y, int64_t n) {
  static_assert(sizeof(T) == 2);
  if constexpr (std::is_same_v<T, Half>) FloatToHalfArray(x, reinterpret_cast<uint16_t*>(y), size_t(n));
  else FloatToBf16Array(x, reinterpret_cast<uint16_t*>(y), size_t(n));
}

// y[0, n) = Store<T>(f32(Load(x))) where f32(const float* in, float* out, int64_t m) computes a
// float function elementwise; float data is passed through without copies (in place allowed).
template <typename T, typename F32>
void ApplyFloatRoutine(const T* x, T* y, int64_t n, F32&& f32) {
  if constexpr (std::is_same_v<T, float>) {
    f32(x, y, n);
  } else {
    float buf[kBlock];
    for (int64_t b = 0; b < n; b += kBlock) {
      int64_t m = std::min(kBlock, n - b);
      WidenArray(x + b, buf, m);
      f32(buf, buf, m);
      NarrowArray(buf, y + b, m);
    }
  }
}

// fn(x, offset, m) over row x[0, n) as floats: the row itself, or widened blocks of kBlock.
template <typename T, typename Fn>
void FloatBlocks(const T* x, int64_t n, Fn&& fn) {
  if constexpr (std::is_same_v<T, float>) {
    fn(x, int64_t(0), n);
  } else {
    float buf[kBlock];
    for (int64_t b = 0; b < n; b += kBlock) {
      int64_t m = std::min(kBlock, n - b);
      WidenArray(x + b, buf, m);
      fn(static_cast<const float*>(buf), b, m);
    }
  }
}

// The same over two rows read together (dY and X).
template <typename T, typename Fn>
void FloatBlocks2(const T* g, const T* x, int64_t n, Fn&& fn) {
  if constexpr (std::is_same_v<T, float>) {
    fn(g, x, int64_t(0), n);
  } else {
    float gb[kBlock], xb[kBlock];
    for (int64_t b = 0; b < n; b += kBlock) {
      int64_t m = std::min(kBlock, n - b);
      WidenArray(g + b, gb, m);
      WidenArray(x + b, xb, m);
      fn(static_cast<const float*>(gb), static_cast<const float*>(xb), b, m);
    }
  }
}

// y[offset, offset + m) = v[0, m), rounded once for a 16-bit T.
template <typename T>
void StoreBlock(const float* v, T* y, int64_t offset, int64_t m) {
  if constexpr (std::is_same_v<T, float>) std::copy(v, v + m, y + offset);
  else NarrowArray(v, y + offset, m);
}

// Calls fn(T{}) for the storage types the fast kernels take: f32, f16, bf16.
template <typename Fn>
bool DispatchFast(DataType t, Fn&& fn) {
  switch (t) {
    case DataType::kF32: fn(float{}); return true;
    case DataType::kF16: fn(Half{}); return true;
    case DataType::kBF16: fn(BFloat16{}); return true;
    default: return false;
  }
}

// Registration helpers of the fast kernel files (called by RegisterFastKernels).
void AddFastUnaryKernels(KernelRegistry& r);      // fast_unary.cc
void AddFastSoftmaxKernels(KernelRegistry& r);    // fast_softmax.cc
void AddFastNormKernels(KernelRegistry& r);       // fast_norm.cc
void AddFastReduceKernels(KernelRegistry& r);     // fast_reduce.cc
void AddFastWhereKernel(KernelRegistry& r);       // fast_where.cc
void AddFastTrainingKernels(KernelRegistry& r);   // fast_train.cc
void AddFastTransposeKernels(KernelRegistry& r);  // fast_transpose.cc
void AddFastNhwcPoolKernels(KernelRegistry& r);   // fast_nhwc_pool.cc (channels-last steps)

}  // namespace precis::rt::fast
