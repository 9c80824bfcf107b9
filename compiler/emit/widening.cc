// Widening decisions (widening.h) from the backends' capability tables.
#include "compiler/emit/widening.h"

#include <algorithm>
#include <set>

#include "compiler/ops/op_registry.h"
#include "runtime/cpu/capabilities.h"
#include "runtime/cuda/capabilities.h"

namespace precis::emit {
namespace {

bool IsHalf(ir::DType t) { return t == ir::DType::kF16 || t == ir::DType::kBF16; }

template <typename List>
bool Listed(const List& list, const std::string& kernel) {
  return std::find(list.begin(), list.end(), kernel) != list.end();
}

std::string Names(const std::set<ir::DType>& dtypes) {
  std::string s;
  for (ir::DType t : dtypes) s += (s.empty() ? "" : ", ") + std::string(ir::DTypeName(t));
  return s;
}

}  // namespace

Widening WideningOf(const std::string& kernel, int low_inputs, const std::vector<ir::DType>& inputs, const std::vector<ir::DType>& outputs,
                    int low_outputs) {
  Widening w;
  bool half = false;
  std::set<ir::DType> floats;  // float dtypes among the leading low inputs and the outputs
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (!ir::IsFloat(inputs[i])) continue;
    half = half || IsHalf(inputs[i]);
    if (low_inputs < 0 || int(i) < low_inputs) floats.insert(inputs[i]);
  }
  std::set<ir::DType> out_floats;
  for (size_t i = 0; i < outputs.size(); ++i) {
    ir::DType t = outputs[i];
    if (!ir::IsFloat(t)) continue;
    half = half || IsHalf(t);
    if (low_outputs < 0 || int(i) < low_outputs) floats.insert(t), out_floats.insert(t);
  }
  if (!half) return w;
  bool mixed = floats.size() > 1;
  std::string mix = "float dtypes " + Names(floats);

  namespace cpu = rt::cpu_capabilities;
  auto fp32 = std::find_if(cpu::kFp32ComputeKernels.begin(), cpu::kFp32ComputeKernels.end(),
                           [&](const cpu::Fp32Kernel& k) { return k.kernel == kernel; });
  if (fp32 != cpu::kFp32ComputeKernels.end()) {
    w.cpu = {true, ir::Reason::kWidenedKernel, std::string(fp32->why)};
  } else if (mixed && !Listed(cpu::kMixedFloatKernels, kernel)) {
    w.cpu = {true, ir::Reason::kWidenedMixedDtypes, mix + ": the CPU's " + kernel + " kernels take one float dtype"};
  }

  namespace cuda = rt::cuda_capabilities;
  // cuBLASLt's products: A and B of one 16-bit dtype, Y of theirs or FP32, Gemm's C of either.
  auto at = [](const std::vector<ir::DType>& v, size_t i) { return i < v.size() ? v[i] : ir::DType::kUndefined; };
  ir::DType a = at(inputs, 0), y = at(outputs, 0), c = at(inputs, 2);
  bool half_to_fp32 = Listed(cuda::kHalfToFp32Kernels, kernel) && IsHalf(a) && at(inputs, 1) == a && (y == a || y == ir::DType::kF32) &&
                      (c == ir::DType::kUndefined || c == a || c == y);
  if (mixed && !half_to_fp32 && !Listed(cuda::kMixedFloatKernels, kernel))
    w.cuda = {true, ir::Reason::kWidenedMixedDtypes, mix + ": the CUDA " + kernel + " kernel takes one float dtype"};
  return w;
}

Widening WideningOf(const ir::Node& node) {
  const ops::OpDef* def = ops::OpRegistry::Get().Find(node.domain(), node.op_type());
  std::string kernel = def && !def->kernel.empty() ? def->kernel : node.op_type();
  int low = def ? def->low_inputs : -1, low_out = def ? def->low_outputs : -1;
  std::vector<ir::DType> ins, outs;
  for (const ir::Value* v : node.inputs()) ins.push_back(v && v->type().is_tensor() ? v->type().dtype() : ir::DType::kUndefined);
  for (const ir::Value* v : node.outputs()) outs.push_back(v && v->type().is_tensor() ? v->type().dtype() : ir::DType::kUndefined);
  return WideningOf(kernel, low, ins, outs, low_out);
}

}  // namespace precis::emit
