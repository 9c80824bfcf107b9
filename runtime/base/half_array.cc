// Array conversions (see half_array.h). The F16C instructions round to nearest even and keep
// NaN payloads the way FloatToHalf does (quiet bit set, low payload bits dropped); the BF16
// paths are the scalar integer formulas written eight lanes wide.
#include "runtime/base/half_array.h"

#include "runtime/base/cpu_features.h"
#include "runtime/base/half.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
#define PRECIS_X86_SIMD 1
#endif

namespace precis {
namespace {

#ifdef PRECIS_X86_SIMD
// The SIMD loops below use F16C and AVX2 (clang's __builtin_cpu_supports does not know "f16c").
bool HasF16c() {
  static const bool has = HostCpuFeatures().f16c && HostCpuFeatures().avx2;
  return has;
}

__attribute__((target("avx2,f16c"))) size_t FloatToHalfSimd(const float* src, uint16_t* dst, size_t n) {
  size_t i = 0;
  for (; i + 8 <= n; i += 8)
    _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + i), _mm256_cvtps_ph(_mm256_loadu_ps(src + i), _MM_FROUND_TO_NEAREST_INT));
  return i;
}

__attribute__((target("avx2,f16c"))) size_t HalfToFloatSimd(const uint16_t* src, float* dst, size_t n) {
  size_t i = 0;
  for (; i + 8 <= n; i += 8)
    _mm256_storeu_ps(dst + i, _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(src + i))));
  return i;
}

__attribute__((target("avx2"))) size_t FloatToBf16Simd(const float* src, uint16_t* dst, size_t n) {
  const __m256i abs_mask = _mm256_set1_epi32(0x7fffffff), inf = _mm256_set1_epi32(0x7f800000);
  const __m256i bias = _mm256_set1_epi32(0x7fff), one = _mm256_set1_epi32(1), quiet = _mm256_set1_epi32(0x40);
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    __m256i u = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(src + i));
    __m256i is_nan = _mm256_cmpgt_epi32(_mm256_and_si256(u, abs_mask), inf);
    __m256i lsb = _mm256_and_si256(_mm256_srli_epi32(u, 16), one);
    __m256i rounded = _mm256_srli_epi32(_mm256_add_epi32(u, _mm256_add_epi32(bias, lsb)), 16);
    __m256i nan = _mm256_or_si256(_mm256_srli_epi32(u, 16), quiet);
    __m256i r = _mm256_blendv_epi8(rounded, nan, is_nan);
    // Pack the low 16 bits of eight 32-bit lanes (values fit: no saturation).
    __m256i packed = _mm256_packus_epi32(r, r);
    packed = _mm256_permute4x64_epi64(packed, 0x08);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + i), _mm256_castsi256_si128(packed));
  }
  return i;
}

__attribute__((target("avx2"))) size_t Bf16ToFloatSimd(const uint16_t* src, float* dst, size_t n) {
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    __m256i w = _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(src + i)));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(dst + i), _mm256_slli_epi32(w, 16));
  }
  return i;
}
#endif

}  // namespace

void FloatToHalfArray(const float* src, uint16_t* dst, size_t n) {
  size_t i = 0;
#ifdef PRECIS_X86_SIMD
  if (HasF16c()) i = FloatToHalfSimd(src, dst, n);
#endif
  for (; i < n; ++i) dst[i] = FloatToHalf(src[i]);
}

void HalfToFloatArray(const uint16_t* src, float* dst, size_t n) {
  size_t i = 0;
#ifdef PRECIS_X86_SIMD
  if (HasF16c()) i = HalfToFloatSimd(src, dst, n);
#endif
  for (; i < n; ++i) dst[i] = HalfToFloat(src[i]);
}

void FloatToBf16Array(const float* src, uint16_t* dst, size_t n) {
  size_t i = 0;
#ifdef PRECIS_X86_SIMD
  if (HasF16c()) i = FloatToBf16Simd(src, dst, n);
#endif
  for (; i < n; ++i) dst[i] = FloatToBf16(src[i]);
}

void Bf16ToFloatArray(const uint16_t* src, float* dst, size_t n) {
  size_t i = 0;
#ifdef PRECIS_X86_SIMD
  if (HasF16c()) i = Bf16ToFloatSimd(src, dst, n);
#endif
  for (; i < n; ++i) dst[i] = Bf16ToFloat(src[i]);
}

}  // namespace precis
