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

// The same for whole arrays of n elements (split among threads in contiguous chunks).
void WidenArrayParallel(DataType dtype, const uint8_t* src, float* dst, int64_t n, int threads);
void NarrowArrayParallel(DataType dtype, const float* src, uint8_t* dst, int64_t n, int threads);

// Tests: the bytes of FP32 weights per block of the MatMul/Gemm kernel for 16-bit weights (0:
// the default, 4 MiB); returns the previous value. Steps initialized afterwards use it.
int64_t SetWeightBlockBytesForTesting(int64_t bytes);

}  // namespace precis::rt
