// 16-bit <-> FP32 conversion of 2-D blocks over the OpenMP threads (fast_convert.cc), for kernels
// that compute in FP32 on 16-bit operands block by block (dnnl_matmul.cc: 16-bit weights widened
// one block at a time instead of a full FP32 copy at load). The conversions are those of
// runtime/base/half_array.h: exact widening, round to nearest even when narrowing.
#pragma once

#include <cstdint>

#include "precis/types.h"

namespace precis::rt {

inline bool IsHalf(DataType t) { return t == DataType::kF16 || t == DataType::kBF16; }

// dst[r * cols + c] = float(src[r * src_stride + c]) for r < rows, c < cols; `dtype` FP16 or BF16.
void WidenBlock(DataType dtype, const uint8_t* src, int64_t src_stride, float* dst, int64_t rows, int64_t cols, int threads);
// dst[r * dst_stride + c] = round(src[r * cols + c]) to `dtype` (FP16 or BF16).
void NarrowBlock(DataType dtype, const float* src, uint8_t* dst, int64_t dst_stride, int64_t rows, int64_t cols, int threads);

// A stretch of one row of a blocked layout: columns n0 .. n0 + len of a [K, N] matrix lie at
// consecutive destination offsets off .. off + len (plus the row's offset).
struct LayoutRun {
  int64_t n0, len, off;
};
// dst[row_off[k] + run.off + j] = float(src[k * src_stride + run.n0 + j]) for k < rows, each run
// and j < run.len: a plain 16-bit [K, N] matrix widened straight into a blocked FP32 layout whose
// offsets add up per dimension (oneDNN's packed weights), in one pass.
void WidenIntoLayout(DataType dtype, const uint8_t* src, int64_t src_stride, int64_t rows, const int64_t* row_off,
                     const LayoutRun* runs, int64_t num_runs, float* dst, int threads);

// The same for whole arrays of n elements (split among threads in contiguous chunks).
void WidenArrayParallel(DataType dtype, const uint8_t* src, float* dst, int64_t n, int threads);
void NarrowArrayParallel(DataType dtype, const float* src, uint8_t* dst, int64_t n, int threads);

// Calls fn(context, job, thread) for every job in [0, jobs) on up to `threads` OpenMP threads,
// thread t taking jobs t, t + T, t + 2T... (`thread` < threads: an index into per-thread
// buffers). For kernels in files built without OpenMP; allocates nothing.
void ParallelJobs(int64_t jobs, int threads, void (*fn)(void* context, int64_t job, int thread), void* context);

// Y[m * ldy + n] = sum_k A[m * K + k] * W(k, n) (+ bias[n]) for m < M, n < N, with FP32 A, bias
// and Y and 16-bit weights W ([K, N], or [N, K] when trans_b; FP16 or BF16) read as they are stored,
// FP32 accumulation (fast_half_gemv.cc). For few rows of A: W is read once, in pieces widened in L1.
// `scratch` holds HalfWeightsGemvScratchBytes(M, threads) bytes, 64-byte aligned.
void HalfWeightsGemv(DataType wtype, const float* a, int64_t M, int64_t K, const uint8_t* w, int64_t N, bool trans_b,
                     const float* bias, float* y, int64_t ldy, uint8_t* scratch, int threads);
int64_t HalfWeightsGemvScratchBytes(int64_t M, int threads);
// At most this many rows of A take HalfWeightsGemv (the MatMul/Gemm kernels of dnnl_matmul.cc).
constexpr int64_t kHalfWeightsGemvRows = 8;

// The same product for more rows of A on CPUs with AVX2, FMA and F16C (fast_half_gemm.cc): W read
// where it lies in panels of 16 columns, each slice of 256 values of k widened into L1 and
// multiplied by 6 x 16 register tiles over packed rows of A; no copy of W. FP32 accumulation,
// bias first, then k in order. `scratch` holds HalfWeightsGemmScratchBytes(M, K, threads) bytes, 64-byte
// aligned. Callers check HalfWeightsGemmAvailable() first.
bool HalfWeightsGemmAvailable();
// A [M, K] and Y are of type `atype` and `ytype` (FP32, FP16 or BF16; bias FP32): a 16-bit A is
// widened as it is packed, a 16-bit Y accumulated in FP32 in the scratch and rounded to nearest
// even once (the bits of the FP32 product rounded), with no FP32 copy of either.
void HalfWeightsGemm(DataType wtype, DataType atype, const void* a, int64_t M, int64_t K, const uint8_t* w, int64_t N, bool trans_b,
                     const float* bias, DataType ytype, void* y, int64_t ldy, uint8_t* scratch, int threads);
int64_t HalfWeightsGemmScratchBytes(int64_t M, int64_t K, int threads);

// A channels-last 2-D convolution, group 1: X [N, H, W, C], W [M, KH, KW, C], Y [N, OH, OW, M].
// Strides, dilations (ONNX's: 1 is none) and the top and left padding place the windows.
struct HalfConvGeometry {
  int64_t N = 0, H = 0, W = 0, C = 0, OH = 0, OW = 0, M = 0, KH = 0, KW = 0;
  int64_t stride_h = 1, stride_w = 1, dilation_h = 1, dilation_w = 1, pad_top = 0, pad_left = 0;
};
// The convolution as HalfWeightsGemm's product of the implicit [N x OH x OW, KH x KW x C] matrix
// of windows by W read as [M, KH x KW x C] (trans_b): the windows are packed straight from X
// (FP32, FP16 or BF16; zeros for the padding), W (FP16 or BF16) is widened slice by slice as in
// HalfWeightsGemm, no copy of either is kept. Y of type `ytype` (FP32 or 16-bit, rounded once).
// `bias` FP32 or null; `clamp` null or {lo, hi}: a fused Relu or Clip on the FP32 sums, NaN
// becoming lo. `scratch` holds HalfWeightsConvScratchBytes(g, threads) bytes, 64-byte aligned.
// Callers check HalfWeightsGemmAvailable() first.
void HalfWeightsConv(DataType wtype, DataType xtype, const void* x, const HalfConvGeometry& g, const uint8_t* w, const float* bias,
                     const float* clamp, DataType ytype, void* y, uint8_t* scratch, int threads);
int64_t HalfWeightsConvScratchBytes(const HalfConvGeometry& g, int threads);

// A channels-last depthwise convolution (group = C = M; W [C, KH, KW, 1], FP16 or BF16) with X
// read where it lies eight channels at a time and the weights widened into the scratch at every
// run (fast_half_depthwise.cc). Arguments as HalfWeightsConv's; FP32 sums, bias first, then the
// taps in order. `scratch` holds HalfDepthwiseConvScratchBytes(g, threads) bytes, 64-byte aligned.
void HalfDepthwiseConv(DataType wtype, DataType xtype, const void* x, const HalfConvGeometry& g, const uint8_t* w, const float* bias,
                       const float* clamp, DataType ytype, void* y, uint8_t* scratch, int threads);
int64_t HalfDepthwiseConvScratchBytes(const HalfConvGeometry& g, int threads);

// Tests: the bytes of FP32 weights per block of the MatMul/Gemm kernel for 16-bit weights (0:
// the default, 4 MiB); returns the previous value. Steps initialized afterwards use it.
int64_t SetWeightBlockBytesForTesting(int64_t bytes);
// Tests: whether MatMul/Gemm steps initialized afterwards take HalfWeightsGemm past
// kHalfWeightsGemvRows rows: 1 yes (where HalfWeightsGemmAvailable()), 0 no (widened blocks), -1
// by the CPU and PRECIS_CPU_HALF_GEMM (the default). Returns the previous value.
int SetHalfWeightsGemmForTesting(int mode);
// Whether channels-last convolutions with 16-bit weights take HalfWeightsConv: where
// HalfWeightsGemmAvailable(), unless PRECIS_CPU_HALF_GEMM=0 or SetHalfWeightsGemmForTesting
// says otherwise (dnnl_matmul.cc).
bool UseHalfWeightsConv();

}  // namespace precis::rt
