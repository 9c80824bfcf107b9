// Helpers of the data movement kernels (tensor*.cc): strided copies, which express Transpose,
// Slice, Expand, Tile, DepthToSpace and SpaceToDepth as one loop nest, and small index
// utilities. Everything works on raw bytes by element size: data movement needs no per-type code.
#pragma once

#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "runtime/cpu/kernels/common.h"
#include "runtime/kernels/index_util.h"     // DenseStrides, DimProduct, IsIndexType, IndexAt
#include "runtime/kernels/strided_views.h"  // StridedView

namespace precis::rt {

// The same view with size-1 dims dropped and adjacent dims merged where the source is
// contiguous across them, so that the copy loop runs on as few and as long rows as possible.
StridedView Coalesce(const StridedView& view);

// dst = src read through `view`; elements of `esize` bytes. Does not allocate.
void StridedCopy(const uint8_t* src, uint8_t* dst, const StridedView& view, size_t esize);

// Calls fn(T{}) with T an unsigned integer of `esize` bytes (1, 2, 4 or 8), to move elements
// of any dtype; returns false for other sizes.
template <typename Fn>
bool DispatchBySize(size_t esize, Fn&& fn) {
  switch (esize) {
    case 1: fn(uint8_t{}); return true;
    case 2: fn(uint16_t{}); return true;
    case 4: fn(uint32_t{}); return true;
    case 8: fn(uint64_t{}); return true;
    default: return false;
  }
}

// A double converted to storage type T without undefined behaviour: integers saturate (NaN
// gives 0), floats round as Store does.
template <typename T>
T SaturatingCast(double v) {
  if constexpr (std::is_integral_v<T>) {
    if (!(v == v)) return T(0);
    if (v <= double(std::numeric_limits<T>::lowest())) return std::numeric_limits<T>::lowest();
    if (v >= double(std::numeric_limits<T>::max())) return std::numeric_limits<T>::max();
    return T(v);
  } else {
    return Store<T>(v);
  }
}

// Wraps a possibly negative index into [0, n); false when it is out of range.
inline bool WrapIndex(int64_t& index, int64_t n) {
  if (index < 0) index += n;
  return index >= 0 && index < n;
}

// Copies input to output unless the kernel runs in place (same buffer).
inline void CopyIfDistinct(const Tensor& in, Tensor& out) {
  if (out.data != in.data && out.bytes) std::memmove(out.data, in.data, out.bytes);
}

}  // namespace precis::rt
