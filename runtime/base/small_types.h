// The 8-, 4- and 2-bit element types of ONNX (float8 e4m3fn/e4m3fnuz/e5m2/e5m2fnuz/e8m0, float4
// e2m1, int4/uint4, int2/uint2): Precis holds them one element per byte (4- and 2-bit values in
// the low bits, signed ones sign-extended to the byte), in plans, in memory and at the API; only
// ONNX files pack them (UnpackSubByte). They are storage types: Cast, CastLike and the
// quantization operators convert them, data movement moves them, nothing computes in them.
// Conversions follow ml_dtypes, which ONNX's reference uses: round to nearest even; float8 with
// saturate clamps to the largest finite value, without it overflow gives Inf (e5m2) or NaN;
// float4 always clamps; e8m0 takes the exponent of the float32 value, rounded up, down or to
// nearest as ONNX's to_float8e8m0 does; int4/int2 truncate toward zero and wrap.
#pragma once

#include <cstdint>
#include <string>

#include "precis/types.h"

namespace precis {

bool IsSmallType(DataType t);
// Bits per element in ONNX's packing: 4 or 2 for the packed types, else 8.
int PackedBits(DataType t);
double SmallToDouble(DataType t, uint8_t v);
enum class E8M0Rounding { kUp, kDown, kNearest };
uint8_t SmallFromDouble(DataType t, double x, bool saturate = true, E8M0Rounding rounding = E8M0Rounding::kUp);
// n elements of a packed 4- or 2-bit type (low bits first) into one byte each.
void UnpackSubByte(DataType t, const uint8_t* packed, int64_t n, uint8_t* out);
// Bytes of n packed elements in an ONNX file.
inline int64_t PackedBytes(DataType t, int64_t n) { return (n * PackedBits(t) + 7) / 8; }

}  // namespace precis
