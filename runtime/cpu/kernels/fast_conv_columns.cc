// Image columns (conv_columns.h): plain loops, parallel over rows of the column matrix or over
// image planes, so that each output element is written by one thread.
#include <omp.h>

#include <algorithm>
#include <cstring>

#include "runtime/cpu/kernels/conv_columns.h"
#include "runtime/cpu/kernels/fast_util.h"

namespace precis::rt {

namespace {

template <typename T>
void ImageToColumnsOf(const T* x, T* cols, const ColumnGeometry& g, int threads) {
  const int64_t K = g.K(), P = g.P();
  fast::ParallelFor(g.N * P, K, threads, [&](int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r) {
      const int64_t n = r / P, oh = (r % P) / g.OW, ow = r % g.OW;
      T* row = cols + r * K;
      for (int64_t c = 0; c < g.C; ++c) {
        const T* plane = x + (n * g.C + c) * g.H * g.W;
        for (int64_t kh = 0; kh < g.KH; ++kh) {
          const int64_t ih = oh * g.sh - g.ph + kh * g.dh;
          T* out = row + (c * g.KH + kh) * g.KW;
          if (ih < 0 || ih >= g.H) {
            for (int64_t kw = 0; kw < g.KW; ++kw) out[kw] = T(0);
            continue;
          }
          const T* in = plane + ih * g.W;
          for (int64_t kw = 0; kw < g.KW; ++kw) {
            const int64_t iw = ow * g.sw - g.pw + kw * g.dw;
            out[kw] = iw >= 0 && iw < g.W ? in[iw] : T(0);
          }
        }
      }
    }
  });
}

}  // namespace

void ImageToColumns(const void* x, void* cols, size_t elem, const ColumnGeometry& g, int threads) {
  if (elem == 2) ImageToColumnsOf(static_cast<const uint16_t*>(x), static_cast<uint16_t*>(cols), g, threads);
  else ImageToColumnsOf(static_cast<const uint32_t*>(x), static_cast<uint32_t*>(cols), g, threads);
}

namespace {

void StorePlane(const float* acc, void* x, DataType dtype, int64_t offset, int64_t n) {
  if (dtype == DataType::kF32) std::memcpy(static_cast<float*>(x) + offset, acc, size_t(n) * 4);
  else if (dtype == DataType::kBF16) fast::NarrowArray(acc, static_cast<BFloat16*>(x) + offset, n);
  else fast::NarrowArray(acc, static_cast<Half*>(x) + offset, n);
}

}  // namespace

void ColumnsToImage(const float* cols, const float* bias, void* x, DataType dtype, const ColumnGeometry& g, int threads, float* work) {
  const int64_t K = g.K(), P = g.P(), HW = g.H * g.W;
  fast::ParallelFor(g.N * g.C, P * g.KH * g.KW, threads, [&](int64_t begin, int64_t end) {
    float* acc = work + HW * omp_get_thread_num();
    for (int64_t plane = begin; plane < end; ++plane) {
      const int64_t n = plane / g.C, c = plane % g.C;
      std::fill(acc, acc + HW, bias ? bias[c] : 0.0f);
      for (int64_t oh = 0; oh < g.OH; ++oh)
        for (int64_t ow = 0; ow < g.OW; ++ow) {
          const float* row = cols + (n * P + oh * g.OW + ow) * K + c * g.KH * g.KW;
          for (int64_t kh = 0; kh < g.KH; ++kh) {
            const int64_t ih = oh * g.sh - g.ph + kh * g.dh;
            if (ih < 0 || ih >= g.H) continue;
            for (int64_t kw = 0; kw < g.KW; ++kw) {
              const int64_t iw = ow * g.sw - g.pw + kw * g.dw;
              if (iw >= 0 && iw < g.W) acc[ih * g.W + iw] += row[kh * g.KW + kw];
            }
          }
        }
      StorePlane(acc, x, dtype, plane * HW, HW);
    }
  });
}

void ToChannelMajor(const void* y, void* t, size_t elem, int64_t N, int64_t M, int64_t P, int threads) {
  const auto* src = static_cast<const uint8_t*>(y);
  auto* dst = static_cast<uint8_t*>(t);
  fast::ParallelFor(N * M, P, threads, [&](int64_t begin, int64_t end) {
    for (int64_t nm = begin; nm < end; ++nm) {
      const int64_t n = nm / M, m = nm % M;
      std::memcpy(dst + size_t(m * N * P + n * P) * elem, src + size_t(nm * P) * elem, size_t(P) * elem);
    }
  });
}

}  // namespace precis::rt
