// Host-side parts of device_util.cuh: stride computations and index-map construction.
#include "runtime/cuda/device_util.cuh"

namespace precis::rt::cuda {

std::vector<int64_t> BroadcastStrides(const std::vector<int64_t>& in, const std::vector<int64_t>& out) {
  std::vector<int64_t> dense = DenseStrides(in), s(out.size(), 0);
  size_t shift = out.size() - in.size();
  for (size_t i = 0; i < in.size(); ++i) s[i + shift] = in[i] == 1 && out[i + shift] != 1 ? 0 : dense[i];
  return s;
}

bool Indexer::Make(const std::vector<int64_t>& dims, const std::vector<int64_t>& strides, int64_t base, Indexer* out) {
  // Drop size-1 axes, then merge axis d into d+1 when stepping over d is a full run of d+1.
  std::vector<int64_t> d, s;
  for (size_t i = 0; i < dims.size(); ++i) {
    if (dims[i] == 1) continue;
    if (!d.empty() && s.back() == strides[i] * dims[i]) {
      d.back() *= dims[i];
      s.back() = strides[i];
      continue;
    }
    d.push_back(dims[i]);
    s.push_back(strides[i]);
  }
  if (d.size() > size_t(kMaxRank)) return false;
  *out = Indexer{};
  out->rank = int(d.size());
  for (size_t i = 0; i < d.size(); ++i) {
    out->dims[i] = d[i];
    out->strides[i] = s[i];
  }
  out->base = base;
  return true;
}

}  // namespace precis::rt::cuda
