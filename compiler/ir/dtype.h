// DType: the element types of the Precis IR, with their names, sizes and ONNX codes.
// Float8, int4/uint4, float4 and complex ONNX types are not representable: ToDType reports them
// by name so that the importer can refuse them with a clear message.
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
};

// Short text name: "f32", "bf16", "i64", "bool", "string"; "undefined" for kUndefined.
std::string_view DTypeName(DType t);
std::optional<DType> DTypeFromName(std::string_view name);
// Bytes per element; 0 for kString and kUndefined.
int64_t DTypeSize(DType t);
bool IsFloat(DType t);    // f32, f16, bf16, f64
bool IsHalfFloat(DType t);  // f16, bf16
bool IsInteger(DType t);  // signed and unsigned integers

// ONNX TensorProto.DataType code <-> DType. Unrepresentable codes give Unimplemented naming the
// ONNX type ("float8e4m3fn"), unknown codes InvalidArgument.
StatusOr<DType> DTypeFromOnnx(int32_t onnx_code);
int32_t DTypeToOnnx(DType t);
// The ONNX name of a TensorProto.DataType code, or "code N" when unknown.
std::string OnnxDataTypeName(int32_t onnx_code);

}  // namespace precis::ir
