// The 6 x 16 FP32 register tile shared by the fast kernels that multiply packed panels
// (fast_pointwise.cc: 1x1 convolutions; fast_half_gemm.cc: MatMul/Gemm over 16-bit weights):
// 12 AVX2 accumulators, rows from a panel packed [depth][6], 16 columns per row of the other
// operand, one FMA per term, k in order. Callers start the accumulators (bias, zero or Y) and
// choose the masks; only fast_*.cc files include this header (built with -O3).
#pragma once

#include <immintrin.h>

#include <cstdint>

namespace precis::rt::fast {

// Named accumulators (GCC keeps an indexed array of vectors in memory): row r's columns 0-7 and
// 8-15 in c<r>0 and c<r>1.
struct Acc6x16 {
  __m256 c00, c01, c10, c11, c20, c21, c30, c31, c40, c41, c50, c51;
};

// Lanes of columns 0-7 (m0) and 8-15 (m1) that are below `cols`.
__attribute__((target("avx2,fma"), always_inline)) inline void ColumnMasks(int64_t cols, __m256i* m0, __m256i* m1) {
  const __m256i lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
  *m0 = _mm256_cmpgt_epi32(_mm256_set1_epi32(int(cols)), lane);
  *m1 = _mm256_cmpgt_epi32(_mm256_set1_epi32(int(cols) - 8), lane);
}

// 16 floats at p (masked by m0/m1 unless kFull) into *lo and *hi.
template <bool kFull>
__attribute__((target("avx2,fma"), always_inline)) inline void Load16(const float* p, __m256i m0, __m256i m1, __m256* lo, __m256* hi) {
  *lo = kFull ? _mm256_loadu_ps(p) : _mm256_maskload_ps(p, m0);
  *hi = kFull ? _mm256_loadu_ps(p + 8) : _mm256_maskload_ps(p + 8, m1);
}

// acc[r][j] += sum_k a[k * 6 + r] * b[k * ldb + j] for k < depth; b's rows are read whole
// (kFullLoad) or masked by m0/m1.
template <bool kFullLoad>
__attribute__((target("avx2,fma"), always_inline)) inline void Accumulate6x16(Acc6x16& acc, const float* a, const float* b, int64_t ldb,
                                                                              int64_t depth, __m256i m0, __m256i m1) {
  __m256 c00 = acc.c00, c01 = acc.c01, c10 = acc.c10, c11 = acc.c11, c20 = acc.c20, c21 = acc.c21;
  __m256 c30 = acc.c30, c31 = acc.c31, c40 = acc.c40, c41 = acc.c41, c50 = acc.c50, c51 = acc.c51;
  for (int64_t k = 0; k < depth; ++k) {
    __m256 w0, w1;
    Load16<kFullLoad>(b + k * ldb, m0, m1, &w0, &w1);
    const float* ak = a + k * 6;
    __m256 av = _mm256_broadcast_ss(ak);
    c00 = _mm256_fmadd_ps(av, w0, c00), c01 = _mm256_fmadd_ps(av, w1, c01);
    av = _mm256_broadcast_ss(ak + 1);
    c10 = _mm256_fmadd_ps(av, w0, c10), c11 = _mm256_fmadd_ps(av, w1, c11);
    av = _mm256_broadcast_ss(ak + 2);
    c20 = _mm256_fmadd_ps(av, w0, c20), c21 = _mm256_fmadd_ps(av, w1, c21);
    av = _mm256_broadcast_ss(ak + 3);
    c30 = _mm256_fmadd_ps(av, w0, c30), c31 = _mm256_fmadd_ps(av, w1, c31);
    av = _mm256_broadcast_ss(ak + 4);
    c40 = _mm256_fmadd_ps(av, w0, c40), c41 = _mm256_fmadd_ps(av, w1, c41);
    av = _mm256_broadcast_ss(ak + 5);
    c50 = _mm256_fmadd_ps(av, w0, c50), c51 = _mm256_fmadd_ps(av, w1, c51);
  }
  acc = {c00, c01, c10, c11, c20, c21, c30, c31, c40, c41, c50, c51};
}

// Rows r < rows of acc into y (row stride ldy), columns masked by m0/m1 unless kFull.
template <bool kFull>
__attribute__((target("avx2,fma"), always_inline)) inline void Store6x16(const Acc6x16& acc, float* y, int64_t ldy, int64_t rows, __m256i m0,
                                                                         __m256i m1) {
  const __m256 lo[6] = {acc.c00, acc.c10, acc.c20, acc.c30, acc.c40, acc.c50};
  const __m256 hi[6] = {acc.c01, acc.c11, acc.c21, acc.c31, acc.c41, acc.c51};
  for (int64_t r = 0; r < rows && r < 6; ++r) {
    float* yr = y + r * ldy;
    if (kFull) {
      _mm256_storeu_ps(yr, lo[r]);
      _mm256_storeu_ps(yr + 8, hi[r]);
    } else {
      _mm256_maskstore_ps(yr, m0, lo[r]);
      _mm256_maskstore_ps(yr + 8, m1, hi[r]);
    }
  }
}

// Row r (< 6) of acc set to lo (columns 0-7) and hi (8-15).
__attribute__((target("avx2,fma"), always_inline)) inline void SetRow(Acc6x16& acc, int64_t r, __m256 lo, __m256 hi) {
  switch (r) {
    case 0: acc.c00 = lo, acc.c01 = hi; break;
    case 1: acc.c10 = lo, acc.c11 = hi; break;
    case 2: acc.c20 = lo, acc.c21 = hi; break;
    case 3: acc.c30 = lo, acc.c31 = hi; break;
    case 4: acc.c40 = lo, acc.c41 = hi; break;
    default: acc.c50 = lo, acc.c51 = hi; break;
  }
}

}  // namespace precis::rt::fast
