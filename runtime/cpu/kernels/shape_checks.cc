// Shape checks for kernel Init (see shape_checks.h): the errors name the step and both shapes.
#include "runtime/cpu/kernels/shape_checks.h"

#include <algorithm>

namespace precis::rt {

bool BroadcastShapes(const std::vector<std::vector<int64_t>>& shapes, std::vector<int64_t>* out) {
  size_t rank = 0;
  for (const auto& s : shapes) rank = std::max(rank, s.size());
  out->assign(rank, 1);
  for (const auto& s : shapes)
    for (size_t i = 0; i < s.size(); ++i) {
      int64_t& o = (*out)[rank - s.size() + i];
      if (s[i] == 1) continue;
      if (o != 1 && o != s[i]) return false;
      o = s[i];
    }
  return true;
}

Status CheckBroadcast(const KernelArgs& args, const std::vector<int64_t>& out, const std::vector<std::vector<int64_t>>& ins) {
  // What the kernels rely on: each operand is read through a broadcast map onto the output, so each
  // must broadcast to it (a dim equal to the output's, or 1). The output may be larger than the
  // operands' own broadcast (an Expand folded into the step); then every element is still defined.
  for (size_t k = 0; k < ins.size(); ++k) {
    const auto& s = ins[k];
    bool fits = s.size() <= out.size();
    for (size_t i = 0; fits && i < s.size(); ++i) fits = s[i] == 1 || s[i] == out[out.size() - s.size() + i];
    if (!fits)
      return args.Error("operand " + std::to_string(k) + " of shape " + DimsToString(s) + " does not broadcast to the output shape " +
                        DimsToString(out));
  }
  return Status::Ok();
}

Status CheckSameDims(const KernelArgs& args, const Tensor& a, const Tensor& b, const std::string& what) {
  if (a.dims != b.dims) return args.Error(what + " has shape " + DimsToString(b.dims) + ", expected " + DimsToString(a.dims));
  return Status::Ok();
}

Status CheckDims(const KernelArgs& args, const Tensor& t, const std::vector<int64_t>& dims, const std::string& what) {
  if (t.dims != dims) return args.Error(what + " has shape " + DimsToString(t.dims) + ", expected " + DimsToString(dims));
  return Status::Ok();
}

}  // namespace precis::rt
