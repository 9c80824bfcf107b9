// DType: the element types of the Precis IR, with their names, sizes and ONNX codes.
// Complex ONNX types are not representable: DTypeFromOnnx reports them by name so that the
// importer can refuse them with a clear message. Float8, float4, int4 and int2 are storage types.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "precis/status.h"

namespace precis::ir {

enum class DType : uint8_t {
  kUndefined,
  kF32, kF16, kBF16, kF64,
  kI8, kI16, kI32, kI64,
  kU8, kU16, kU32, kU64,
  kBool, kString,
  // Storage types (runtime/base/small_types.h): one element per byte; only Cast, CastLike, the
  // quantization operators and data movement take them.
  kF8E4M3FN, kF8E4M3FNUZ, kF8E5M2, kF8E5M2FNUZ, kU4, kI4, kF4E2M1, kF8E8M0, kU2, kI2,
};

// Short text name: "f32", "bf16", "i64", "bool", "string"; "undefined" for kUndefined.
std::string_view DTypeName(DType t);
std::optional<DType> DTypeFromName(std::string_view name);
// Bytes per element; 0 for kString and kUndefined.
int64_t DTypeSize(DType t);
bool IsFloat(DType t);    // f32, f16, bf16, f64
bool IsHalfFloat(DType t);  // f16, bf16
bool IsInteger(DType t);  // signed and unsigned integers (8 bits and wider)
bool IsStorageType(DType t);  // float8, float4, int4, int2

// ONNX TensorProto.DataType code <-> DType. Unrepresentable codes give Unimplemented naming the
// ONNX type ("float8e4m3fn"), unknown codes InvalidArgument.
StatusOr<DType> DTypeFromOnnx(int32_t onnx_code);
int32_t DTypeToOnnx(DType t);
// The ONNX name of a TensorProto.DataType code, or "code N" when unknown.
std::string OnnxDataTypeName(int32_t onnx_code);

}  // namespace precis::ir
