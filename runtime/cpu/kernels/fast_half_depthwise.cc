// HalfDepthwiseConv (convert_blocks.h): a channels-last depthwise convolution (group = C = M, one
// output channel per input channel) with 16-bit weights, for CPUs with AVX2, FMA and F16C. Such
// steps of FP16 plans (BF16 without native BF16) used to run widened: X widened into an FP32
// copy, oneDNN's FP32 convolution over weights widened at load, Y rounded from an FP32 copy; or in
// bands with the same weights. Here X is read where it lies (FP32, FP16 or BF16) eight channels at
// a time, the weights (C x KH x KW values, a few KiB) are widened into the scratch at every run
// (laid out [KH x KW][C], so eight channels of one tap are one load), and each output row is
// summed in FP32 in the thread's scratch (32 channels at a time in registers, over the taps that
// lie inside the image) and rounded into a 16-bit Y once.
//
// Numerics: FP32 sums, bias first (or 0), then the taps in (kh, kw) order, one FMA per term (the
// taps in the padding are skipped: they add nothing); a fused Relu or Clip on the sums (NaN
// becomes lo), one rounding to nearest even into a 16-bit Y.
#include <immintrin.h>
#include <omp.h>

#include <algorithm>
#include <cstring>

#include "runtime/base/half_array.h"
#include "runtime/cpu/kernels/convert_blocks.h"
#include "runtime/cpu/kernels/fast_half_load.h"
#include "runtime/cpu/kernels/fast_util.h"

namespace precis::rt {
namespace {

// Floats of the scratch before the threads' rows: the widened weights and the bias, each part a
// multiple of 16 (the rows stay 64-byte aligned).
int64_t SharedFloats(const HalfConvGeometry& g) { return (g.KH * g.KW * g.C + 15) / 16 * 16 + (g.C + 15) / 16 * 16; }
// A thread's part: an output row of FP32 sums, then its list of taps (2 x KH x KW int64).
int64_t RowFloats(const HalfConvGeometry& g) { return (g.OW * g.C + 15) / 16 * 16 + (4 * g.KH * g.KW + 15) / 16 * 16; }

// Eight values of X (element type T: float, or uint16_t holding FP16 (kF16) or BF16) as floats.
template <typename T, bool kF16>
__attribute__((target("avx2,f16c"), always_inline)) inline __m256 Get8(const T* p) {
  if constexpr (sizeof(T) == 4) return _mm256_loadu_ps(reinterpret_cast<const float*>(p));
  else return fast::Widen8(kF16, reinterpret_cast<const uint16_t*>(p));
}
template <typename T, bool kF16>
inline float Get1(const T* p) {
  if constexpr (sizeof(T) == 4) return *reinterpret_cast<const float*>(p);
  else return fast::Widen1(kF16, *reinterpret_cast<const uint16_t*>(p));
}

// The sums after a fused Relu or Clip (`clamp` not null): max first, so NaN becomes lo.
__attribute__((target("avx2"), always_inline)) inline __m256 Finish(__m256 v, const float* clamp, __m256 lo, __m256 hi) {
  return clamp ? _mm256_min_ps(_mm256_max_ps(v, lo), hi) : v;
}

// Output row (n, oh) of all channels into `row` ([OW][C] FP32 sums, after the activation). Per
// output pixel, the taps inside the image are listed once; then 32 channels at a time (8 at a
// time, then one at a time at the end) sum over them in four registers.
template <typename T, bool kF16>
__attribute__((target("avx2,fma,f16c"))) void SumRow(const T* x, const HalfConvGeometry& g, const float* wt, const float* bias,
                                                     const float* clamp, int64_t n, int64_t oh, float* row, int64_t* taps) {
  const int64_t C = g.C;
  const __m256 lo = _mm256_set1_ps(clamp ? clamp[0] : 0.0f), hi = _mm256_set1_ps(clamp ? clamp[1] : 0.0f);
  const int64_t ih0 = oh * g.stride_h - g.pad_top;
  for (int64_t ow = 0; ow < g.OW; ++ow) {
    float* out = row + ow * C;
    const int64_t iw0 = ow * g.stride_w - g.pad_left;
    int64_t count = 0;  // taps inside the image: X's pixel offset, then the tap's index
    for (int64_t kh = 0; kh < g.KH; ++kh) {
      const int64_t ih = ih0 + kh * g.dilation_h;
      if (ih < 0 || ih >= g.H) continue;
      for (int64_t kw = 0; kw < g.KW; ++kw) {
        const int64_t iw = iw0 + kw * g.dilation_w;
        if (iw < 0 || iw >= g.W) continue;
        taps[2 * count] = ((n * g.H + ih) * g.W + iw) * C;
        taps[2 * count + 1] = (kh * g.KW + kw) * C;
        ++count;
      }
    }
    int64_t c = 0;
    for (; c + 32 <= C; c += 32) {
      __m256 a0 = bias ? _mm256_loadu_ps(bias + c) : _mm256_setzero_ps(), a1 = bias ? _mm256_loadu_ps(bias + c + 8) : _mm256_setzero_ps();
      __m256 a2 = bias ? _mm256_loadu_ps(bias + c + 16) : _mm256_setzero_ps(), a3 = bias ? _mm256_loadu_ps(bias + c + 24) : _mm256_setzero_ps();
      for (int64_t t = 0; t < count; ++t) {
        const T* xp = x + taps[2 * t] + c;
        const float* wp = wt + taps[2 * t + 1] + c;
        a0 = _mm256_fmadd_ps(Get8<T, kF16>(xp), _mm256_loadu_ps(wp), a0);
        a1 = _mm256_fmadd_ps(Get8<T, kF16>(xp + 8), _mm256_loadu_ps(wp + 8), a1);
        a2 = _mm256_fmadd_ps(Get8<T, kF16>(xp + 16), _mm256_loadu_ps(wp + 16), a2);
        a3 = _mm256_fmadd_ps(Get8<T, kF16>(xp + 24), _mm256_loadu_ps(wp + 24), a3);
      }
      _mm256_storeu_ps(out + c, Finish(a0, clamp, lo, hi));
      _mm256_storeu_ps(out + c + 8, Finish(a1, clamp, lo, hi));
      _mm256_storeu_ps(out + c + 16, Finish(a2, clamp, lo, hi));
      _mm256_storeu_ps(out + c + 24, Finish(a3, clamp, lo, hi));
    }
    for (; c + 8 <= C; c += 8) {
      __m256 a = bias ? _mm256_loadu_ps(bias + c) : _mm256_setzero_ps();
      for (int64_t t = 0; t < count; ++t) a = _mm256_fmadd_ps(Get8<T, kF16>(x + taps[2 * t] + c), _mm256_loadu_ps(wt + taps[2 * t + 1] + c), a);
      _mm256_storeu_ps(out + c, Finish(a, clamp, lo, hi));
    }
    for (; c < C; ++c) {
      float a = bias ? bias[c] : 0.0f;
      for (int64_t t = 0; t < count; ++t) a = std::fma(Get1<T, kF16>(x + taps[2 * t] + c), wt[taps[2 * t + 1] + c], a);
      if (clamp) {
        a = a > clamp[0] ? a : clamp[0];
        a = a < clamp[1] ? a : clamp[1];
      }
      out[c] = a;
    }
  }
}

}  // namespace

int64_t HalfDepthwiseConvScratchBytes(const HalfConvGeometry& g, int threads) {
  return (SharedFloats(g) + int64_t(std::max(threads, 1)) * RowFloats(g)) * int64_t(sizeof(float));
}

void HalfDepthwiseConv(DataType wtype, DataType xtype, const void* x, const HalfConvGeometry& g, const uint8_t* w, const float* bias,
                       const float* clamp, DataType ytype, void* y, uint8_t* scratch, int threads) {
  if (g.N <= 0 || g.OH <= 0 || g.OW <= 0 || g.C <= 0) return;
  // W [C, KH, KW, 1] widened as [KH x KW][C].
  float* wt = reinterpret_cast<float*>(scratch);
  const int64_t taps = g.KH * g.KW;
  const uint16_t* wb = reinterpret_cast<const uint16_t*>(w);
  const bool f16 = wtype == DataType::kF16;
  for (int64_t c = 0; c < g.C; ++c)
    for (int64_t t = 0; t < taps; ++t) wt[t * g.C + c] = fast::Widen1(f16, wb[c * taps + t]);
  float* rows = wt + SharedFloats(g);
  const int level = omp_get_level();
  fast::ParallelFor(g.N * g.OH, g.OW * g.C * taps, threads, [&](int64_t r0, int64_t r1) {
    const int slot = omp_get_level() > level ? omp_get_thread_num() : 0;
    float* mine = rows + slot * RowFloats(g);
    int64_t* taps = reinterpret_cast<int64_t*>(mine + (g.OW * g.C + 15) / 16 * 16);
    const auto sum = [&](int64_t n, int64_t oh, float* row) {
      if (xtype == DataType::kF32) SumRow<float, false>(static_cast<const float*>(x), g, wt, bias, clamp, n, oh, row, taps);
      else if (xtype == DataType::kF16) SumRow<uint16_t, true>(static_cast<const uint16_t*>(x), g, wt, bias, clamp, n, oh, row, taps);
      else SumRow<uint16_t, false>(static_cast<const uint16_t*>(x), g, wt, bias, clamp, n, oh, row, taps);
    };
    for (int64_t r = r0; r < r1; ++r) {
      const int64_t n = r / g.OH, oh = r % g.OH, at = r * g.OW * g.C;
      if (ytype == DataType::kF32) {
        sum(n, oh, static_cast<float*>(y) + at);
        continue;
      }
      float* row = mine;
      sum(n, oh, row);
      uint16_t* to = static_cast<uint16_t*>(y) + at;
      if (ytype == DataType::kF16) FloatToHalfArray(row, to, size_t(g.OW * g.C));
      else FloatToBf16Array(row, to, size_t(g.OW * g.C));
    }
  });
}

}  // namespace precis::rt
