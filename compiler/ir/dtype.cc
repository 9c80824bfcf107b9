// Tables for DType: text names, element sizes and the mapping to and from ONNX codes.
#include "dtype.h"

#include <array>

namespace precis::ir {
namespace {

struct DTypeInfo {
  DType dtype;
  std::string_view name;
  int64_t size;
  int32_t onnx;
};

// Sorted by DType value.
constexpr std::array<DTypeInfo, 25> kDTypes = {{
    {DType::kUndefined, "undefined", 0, 0},
    {DType::kF32, "f32", 4, 1},
    {DType::kF16, "f16", 2, 10},
    {DType::kBF16, "bf16", 2, 16},
    {DType::kF64, "f64", 8, 11},
    {DType::kI8, "i8", 1, 3},
    {DType::kI16, "i16", 2, 5},
    {DType::kI32, "i32", 4, 6},
    {DType::kI64, "i64", 8, 7},
    {DType::kU8, "u8", 1, 2},
    {DType::kU16, "u16", 2, 4},
    {DType::kU32, "u32", 4, 12},
    {DType::kU64, "u64", 8, 13},
    {DType::kBool, "bool", 1, 9},
    {DType::kString, "string", 0, 8},
    {DType::kF8E4M3FN, "f8e4m3fn", 1, 17},
    {DType::kF8E4M3FNUZ, "f8e4m3fnuz", 1, 18},
    {DType::kF8E5M2, "f8e5m2", 1, 19},
    {DType::kF8E5M2FNUZ, "f8e5m2fnuz", 1, 20},
    {DType::kU4, "u4", 1, 21},
    {DType::kI4, "i4", 1, 22},
    {DType::kF4E2M1, "f4e2m1", 1, 23},
    {DType::kF8E8M0, "f8e8m0", 1, 24},
    {DType::kU2, "u2", 1, 25},
    {DType::kI2, "i2", 1, 26},
}};

const DTypeInfo& Info(DType t) { return kDTypes[static_cast<size_t>(t)]; }

}  // namespace

std::string_view DTypeName(DType t) { return Info(t).name; }

std::optional<DType> DTypeFromName(std::string_view name) {
  for (const auto& info : kDTypes)
    if (info.name == name && info.dtype != DType::kUndefined) return info.dtype;
  return std::nullopt;
}

int64_t DTypeSize(DType t) { return Info(t).size; }

bool IsFloat(DType t) {
  return t == DType::kF32 || t == DType::kF16 || t == DType::kBF16 || t == DType::kF64;
}

bool IsHalfFloat(DType t) { return t == DType::kF16 || t == DType::kBF16; }

bool IsInteger(DType t) { return t >= DType::kI8 && t <= DType::kU64; }

bool IsStorageType(DType t) { return t >= DType::kF8E4M3FN && t <= DType::kI2; }

std::string OnnxDataTypeName(int32_t code) {
  static constexpr std::array<std::string_view, 27> kNames = {
      "undefined", "float",  "uint8",      "int8",           "uint16",     "int16",
      "int32",     "int64",  "string",     "bool",           "float16",    "double",
      "uint32",    "uint64", "complex64",  "complex128",     "bfloat16",   "float8e4m3fn",
      "float8e4m3fnuz", "float8e5m2", "float8e5m2fnuz", "uint4", "int4", "float4e2m1",
      "float8e8m0", "uint2", "int2"};
  if (code >= 0 && size_t(code) < kNames.size()) return std::string(kNames[size_t(code)]);
  return "code " + std::to_string(code);
}

StatusOr<DType> DTypeFromOnnx(int32_t code) {
  for (const auto& info : kDTypes)
    if (info.onnx == code && info.dtype != DType::kUndefined) return info.dtype;
  if (code == 0) return InvalidArgument("element type is undefined (0)");
  if (code >= 14 && code <= 27)
    return Unimplemented("element type " + OnnxDataTypeName(code) + " is not supported");
  return InvalidArgument("unknown element type code " + std::to_string(code));
}

int32_t DTypeToOnnx(DType t) { return Info(t).onnx; }

}  // namespace precis::ir
