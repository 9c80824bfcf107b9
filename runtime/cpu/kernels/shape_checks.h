// Init-time checks of a step's tensor shapes, shared by the CPU kernels. A plan comes from a file:
// a kernel must refuse a step whose tensors do not have the shapes it assumes (an error naming
// the step, through args.Error), never read or write out of bounds because a corrupt plan said so.
#pragma once

#include <string>
#include <vector>

#include "runtime/cpu/kernel.h"

namespace precis::rt {

// The numpy broadcast of `shapes`; false when they do not broadcast.
bool BroadcastShapes(const std::vector<std::vector<int64_t>>& shapes, std::vector<int64_t>* out);
// Every operand of `ins` (dims, in order) broadcasts to `out` (numpy rules, right-aligned).
Status CheckBroadcast(const KernelArgs& args, const std::vector<int64_t>& out, const std::vector<std::vector<int64_t>>& ins);
// `b` has the dims of `a`; `what` names them in the error ("output", "input 2").
Status CheckSameDims(const KernelArgs& args, const Tensor& a, const Tensor& b, const std::string& what = "output");
// `t` has `dims`.
Status CheckDims(const KernelArgs& args, const Tensor& t, const std::vector<int64_t>& dims, const std::string& what = "output");

}  // namespace precis::rt
