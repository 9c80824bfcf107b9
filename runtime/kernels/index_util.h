// Index helpers of the host geometry (strided views, Pad maps, Resize inputs) and of the host code
// of the CPU and CUDA kernels: row-major strides, and the values of integer index tensors read on
// the host.
#pragma once

#include <cstdint>
#include <vector>

#include "runtime/exec/step.h"

namespace precis::rt {

// Element strides of a row-major tensor of `dims`.
std::vector<int64_t> DenseStrides(const std::vector<int64_t>& dims);
// Product of dims[begin, end).
int64_t DimProduct(const std::vector<int64_t>& dims, size_t begin, size_t end);

// Whether `t` is an integer dtype (int8..int64, uint8..uint64): the dtypes IndexAt reads.
bool IsIndexType(DataType t);
// Element i of a host tensor of an index type as int64; 0 for other dtypes.
int64_t IndexAt(const Tensor& t, int64_t i);

}  // namespace precis::rt
