// Strided copies and index helpers shared by the data movement kernels (see tensor_util.h).
#include "runtime/cpu/kernels/tensor_util.h"

namespace precis::rt {
namespace {

template <typename T>
void CopyRow(const uint8_t* src, int64_t stride, int64_t n, uint8_t* dst) {
  const T* s = reinterpret_cast<const T*>(src);
  T* d = reinterpret_cast<T*>(dst);
  if (stride == 0) {
    for (int64_t i = 0; i < n; ++i) d[i] = s[0];
  } else {
    for (int64_t i = 0; i < n; ++i) d[i] = s[i * stride];
  }
}

// Copies the sub-view of dims [dim, rank) starting at source element `src_off`; returns the
// destination position after it.
uint8_t* CopyDims(const uint8_t* src, int64_t src_off, uint8_t* dst, const StridedView& v, size_t dim, size_t esize) {
  int64_t n = v.dims[dim], stride = v.strides[dim];
  if (dim + 1 < v.dims.size()) {
    for (int64_t i = 0; i < n; ++i) dst = CopyDims(src, src_off + i * stride, dst, v, dim + 1, esize);
    return dst;
  }
  const uint8_t* row = src + src_off * int64_t(esize);
  if (stride == 1) {
    std::memcpy(dst, row, size_t(n) * esize);
  } else {
    switch (esize) {
      case 1: CopyRow<uint8_t>(row, stride, n, dst); break;
      case 2: CopyRow<uint16_t>(row, stride, n, dst); break;
      case 4: CopyRow<uint32_t>(row, stride, n, dst); break;
      case 8: CopyRow<uint64_t>(row, stride, n, dst); break;
      default:
        for (int64_t i = 0; i < n; ++i) std::memcpy(dst + i * int64_t(esize), row + i * stride * int64_t(esize), esize);
    }
  }
  return dst + n * int64_t(esize);
}

}  // namespace

StridedView Coalesce(const StridedView& view) {
  StridedView out;
  out.offset = view.offset;
  for (size_t d = 0; d < view.dims.size(); ++d) {
    if (view.dims[d] == 0) {  // empty: any single empty dim describes it
      out.dims = {0};
      out.strides = {1};
      return out;
    }
    if (view.dims[d] == 1) continue;
    // Merge into the previous dim when stepping it equals stepping over this whole dim.
    if (!out.dims.empty() && out.strides.back() == view.strides[d] * view.dims[d]) {
      out.dims.back() *= view.dims[d];
      out.strides.back() = view.strides[d];
      continue;
    }
    out.dims.push_back(view.dims[d]);
    out.strides.push_back(view.strides[d]);
  }
  return out;
}

void StridedCopy(const uint8_t* src, uint8_t* dst, const StridedView& view, size_t esize) {
  if (view.dims.empty()) {
    std::memcpy(dst, src + view.offset * int64_t(esize), esize);
    return;
  }
  for (int64_t d : view.dims)
    if (d == 0) return;
  CopyDims(src, view.offset, dst, view, 0, esize);
}

}  // namespace precis::rt
