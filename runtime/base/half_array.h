// Array conversions between FP32 and the 16-bit formats, bit-identical to the scalar functions in
// half.h (round to nearest even, NaN kept NaN; widening may quiet a signaling FP16 NaN). Used where whole tensors convert: weights at
// compile time, 16-bit steps widened to FP32 on the CPU. On x86 CPUs with F16C/AVX2 the loops run
// eight values at a time (chosen at run time); elsewhere they run the scalar code.
#pragma once

#include <cstddef>
#include <cstdint>

namespace precis {

void FloatToHalfArray(const float* src, uint16_t* dst, size_t n);
void HalfToFloatArray(const uint16_t* src, float* dst, size_t n);
void FloatToBf16Array(const float* src, uint16_t* dst, size_t n);
void Bf16ToFloatArray(const uint16_t* src, float* dst, size_t n);

}  // namespace precis
