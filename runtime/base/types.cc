// DataType tables.
#include "precis/types.h"

namespace precis {

size_t DataTypeSize(DataType t) {
  switch (t) {
    case DataType::kF32: case DataType::kI32: case DataType::kU32: return 4;
    case DataType::kF64: case DataType::kI64: case DataType::kU64: return 8;
    case DataType::kF16: case DataType::kBF16: case DataType::kI16: case DataType::kU16: return 2;
    case DataType::kI8: case DataType::kU8: case DataType::kBool: return 1;
    case DataType::kF8E4M3FN: case DataType::kF8E4M3FNUZ: case DataType::kF8E5M2: case DataType::kF8E5M2FNUZ:
    case DataType::kU4: case DataType::kI4: case DataType::kF4E2M1: case DataType::kF8E8M0: case DataType::kU2: case DataType::kI2:
      return 1;  // one element per byte (runtime/base/small_types.h)
    default: return 0;
  }
}

const char* DataTypeName(DataType t) {
  switch (t) {
    case DataType::kF32: return "f32";
    case DataType::kU8: return "u8";
    case DataType::kI8: return "i8";
    case DataType::kU16: return "u16";
    case DataType::kI16: return "i16";
    case DataType::kI32: return "i32";
    case DataType::kI64: return "i64";
    case DataType::kString: return "string";
    case DataType::kBool: return "bool";
    case DataType::kF16: return "f16";
    case DataType::kF64: return "f64";
    case DataType::kU32: return "u32";
    case DataType::kU64: return "u64";
    case DataType::kBF16: return "bf16";
    case DataType::kF8E4M3FN: return "f8e4m3fn";
    case DataType::kF8E4M3FNUZ: return "f8e4m3fnuz";
    case DataType::kF8E5M2: return "f8e5m2";
    case DataType::kF8E5M2FNUZ: return "f8e5m2fnuz";
    case DataType::kU4: return "u4";
    case DataType::kI4: return "i4";
    case DataType::kF4E2M1: return "f4e2m1";
    case DataType::kF8E8M0: return "f8e8m0";
    case DataType::kU2: return "u2";
    case DataType::kI2: return "i2";
    default: return "undefined";
  }
}

bool IsValidDataType(uint8_t code) {
  return code != 0 && code != 8 && DataTypeSize(DataType(code)) != 0;
}

std::string DimsToString(const std::vector<int64_t>& dims) {
  if (dims.empty()) return "scalar";
  std::string s;
  for (size_t i = 0; i < dims.size(); ++i) s += (i ? "x" : "") + std::to_string(dims[i]);
  return s;
}

}  // namespace precis
