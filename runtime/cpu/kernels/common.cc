// Shared kernel helpers.
#include "runtime/cpu/kernels/common.h"

namespace precis::rt {

BroadcastMap::BroadcastMap(const std::vector<int64_t>& out, const std::vector<int64_t>& in) : out_dims_(out) {
  size_t pad = out.size() - in.size();
  strides_.assign(out.size(), 0);
  int64_t stride = 1;
  for (size_t d = in.size(); d-- > 0;) {
    strides_[d + pad] = in[d] == 1 ? 0 : stride;
    stride *= in[d];
  }
  identity_ = in == out;
}

std::vector<int64_t> ReadInts(const Tensor& t) {
  std::vector<int64_t> v(size_t(t.numel));
  for (int64_t i = 0; i < t.numel; ++i) {
    if (t.dtype == DataType::kI64) v[size_t(i)] = t.As<int64_t>()[i];
    else if (t.dtype == DataType::kI32) v[size_t(i)] = t.As<int32_t>()[i];
  }
  return v;
}

std::vector<int64_t> Strides(const std::vector<int64_t>& dims) {
  std::vector<int64_t> s(dims.size(), 1);
  for (size_t d = dims.size(); d-- > 1;) s[d - 1] = s[d] * dims[d];
  return s;
}

}  // namespace precis::rt
