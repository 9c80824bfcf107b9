// Element types and tensor descriptions shared by the runtime's public API and the plan format.
// DataType values are the ONNX TensorProto codes, so plans and tools agree on them.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace precis {

enum class DataType : uint8_t {
  kUndefined = 0,
  kF32 = 1, kU8 = 2, kI8 = 3, kU16 = 4, kI16 = 5, kI32 = 6, kI64 = 7,
  kString = 8, kBool = 9, kF16 = 10, kF64 = 11, kU32 = 12, kU64 = 13, kBF16 = 16,
  // 8-, 4- and 2-bit types (ONNX's float8, float4, int4, int2): one element per byte, 4- and
  // 2-bit values in the low bits, signed ones sign-extended; never packed in memory or plans.
  kF8E4M3FN = 17, kF8E4M3FNUZ = 18, kF8E5M2 = 19, kF8E5M2FNUZ = 20, kU4 = 21, kI4 = 22,
  kF4E2M1 = 23, kF8E8M0 = 24, kU2 = 25, kI2 = 26,
};

// Bytes per element (0 for kString and kUndefined or unknown codes).
size_t DataTypeSize(DataType t);
// "f32", "i64", ...; "undefined" for anything else.
const char* DataTypeName(DataType t);
bool IsValidDataType(uint8_t code);

struct TensorInfo {
  std::string name;
  DataType dtype = DataType::kUndefined;
  // In a dynamic plan (compiled without --shape), a symbolic dim is -1 here (Session::DimNames
  // names it: "batch", "2*seq").
  std::vector<int64_t> dims;
  int64_t NumElements() const {
    int64_t n = 1;
    for (int64_t d : dims) n *= d;
    return n;
  }
  size_t ByteSize() const { return size_t(NumElements()) * DataTypeSize(dtype); }
};

std::string DimsToString(const std::vector<int64_t>& dims);  // "1x3x224x224", "scalar"

}  // namespace precis
