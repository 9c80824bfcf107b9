// Index helpers (see index_util.h).
#include "runtime/kernels/index_util.h"

namespace precis::rt {

std::vector<int64_t> DenseStrides(const std::vector<int64_t>& dims) {
  std::vector<int64_t> s(dims.size(), 1);
  for (size_t d = dims.size(); d-- > 1;) s[d - 1] = s[d] * dims[d];
  return s;
}

int64_t DimProduct(const std::vector<int64_t>& dims, size_t begin, size_t end) {
  int64_t n = 1;
  for (size_t d = begin; d < end && d < dims.size(); ++d) n *= dims[d];
  return n;
}

bool IsIndexType(DataType t) {
  switch (t) {
    case DataType::kI8: case DataType::kI16: case DataType::kI32: case DataType::kI64:
    case DataType::kU8: case DataType::kU16: case DataType::kU32: case DataType::kU64:
      return true;
    default:
      return false;
  }
}

int64_t IndexAt(const Tensor& t, int64_t i) {
  switch (t.dtype) {
    case DataType::kI8: return t.As<int8_t>()[i];
    case DataType::kI16: return t.As<int16_t>()[i];
    case DataType::kI32: return t.As<int32_t>()[i];
    case DataType::kI64: return t.As<int64_t>()[i];
    case DataType::kU8: return t.As<uint8_t>()[i];
    case DataType::kU16: return t.As<uint16_t>()[i];
    case DataType::kU32: return t.As<uint32_t>()[i];
    case DataType::kU64: return int64_t(t.As<uint64_t>()[i]);
    default: return 0;
  }
}

}  // namespace precis::rt
