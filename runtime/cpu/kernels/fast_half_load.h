// Loads of 16-bit (FP16, BF16) and FP32 values as FP32 for the fast kernels that read 16-bit
// operands where they lie (fast_half_gemm.cc, fast_half_depthwise.cc): exact widening (F16C for
// FP16, a shift for BF16). Only fast_*.cc files include this header.
#pragma once

#include <immintrin.h>

#include <cstdint>

#include "precis/types.h"
#include "runtime/base/half.h"

namespace precis::rt::fast {

// Eight 16-bit values at p widened to floats.
__attribute__((target("avx2,f16c"), always_inline)) inline __m256 Widen8(bool f16, const uint16_t* p) {
  const __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
  if (f16) return _mm256_cvtph_ps(h);
  return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16));
}

inline float Widen1(bool f16, uint16_t v) { return f16 ? HalfToFloat(v) : Bf16ToFloat(v); }

// Element i of a (FP32, FP16 or BF16) as a float, and eight from i on.
__attribute__((target("avx2,f16c"), always_inline)) inline float Load1(DataType t, const void* a, int64_t i) {
  if (t == DataType::kF32) return static_cast<const float*>(a)[i];
  const uint16_t v = static_cast<const uint16_t*>(a)[i];
  return t == DataType::kF16 ? _cvtsh_ss(v) : Bf16ToFloat(v);
}
__attribute__((target("avx2,f16c"), always_inline)) inline __m256 Load8(DataType t, const void* a, int64_t i) {
  if (t == DataType::kF32) return _mm256_loadu_ps(static_cast<const float*>(a) + i);
  return Widen8(t == DataType::kF16, static_cast<const uint16_t*>(a) + i);
}

}  // namespace precis::rt::fast
