// Image columns: convolution gradients (2-D, group 1, NCHW) computed as matrix products.
// oneDNN 2.6's BF16 filter and data gradients are slow on small planes (ResNet's last stage at
// 112x112 inputs: 4x4 planes, 512 channels, 3x3 kernels); dnnl_conv.cc runs such steps as AMX
// matrix products over these (see kColumnsPlane there). ImageToColumns lays the windows out as the
// rows of a matrix, ColumnsToImage adds a matrix of such rows back into an image (the adjoint),
// and ToChannelMajor moves an [N, M, P] tensor to [M, N*P].
#pragma once

#include <cstddef>
#include <cstdint>

#include "precis/types.h"

namespace precis::rt {

struct ColumnGeometry {
  int64_t N = 0, C = 0, H = 0, W = 0;    // the image (convolution input)
  int64_t KH = 0, KW = 0, OH = 0, OW = 0;  // kernel and output plane
  int64_t sh = 1, sw = 1, dh = 1, dw = 1;  // strides, dilations (ONNX: 1 is dense)
  int64_t ph = 0, pw = 0;                // padding before the first row and column
  int64_t K() const { return C * KH * KW; }
  int64_t P() const { return OH * OW; }
};

// cols[(n * P + oh * OW + ow) * K + (c * KH + kh) * KW + kw] = x[n, c, oh * sh - ph + kh * dh,
// ow * sw - pw + kw * dw], 0 where that lies outside the image; elements of `elem` bytes (2 or 4),
// copied bit for bit.
void ImageToColumns(const void* x, void* cols, size_t elem, const ColumnGeometry& g, int threads);

// x[n, c, ih, iw] = bias[c] (or 0) + the FP32 sum, in a fixed order, of the cols entries that
// ImageToColumns would read from [n, c, ih, iw]; stored in `dtype` (f32, or rounded to f16/bf16).
// `work`: threads * H * W floats.
void ColumnsToImage(const float* cols, const float* bias, void* x, DataType dtype, const ColumnGeometry& g, int threads, float* work);

// t[m, n * P + p] = y[n, m, p] (ToChannelMajor), elements of `elem` bytes copied bit for bit.
void ToChannelMajor(const void* y, void* t, size_t elem, int64_t N, int64_t M, int64_t P, int threads);

}  // namespace precis::rt
