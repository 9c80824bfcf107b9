// EvaluateNode: runs one node on IR constants through the registered step evaluator (the CPU
// reference kernels when the runtime is linked).
#include "compiler/ops/evaluate.h"

#include "compiler/ops/step_attrs.h"
#include "runtime/exec/evaluator.h"

namespace precis::ops {

StatusOr<std::vector<ir::Tensor>> EvaluateNode(const ir::Node& node, const std::string& kernel_name, int64_t opset,
                                               const std::vector<const ir::Tensor*>& inputs,
                                               const std::vector<ir::Type>& output_types) {
  rt::StepEvaluator evaluate = rt::FindStepEvaluator();
  if (!evaluate) return Unimplemented(node.Describe() + ": no reference kernels are linked to evaluate it (link precis_runtime)");
  flatbuffers::FlatBufferBuilder b;
  auto attrs = BuildStepAttrs(b, node, opset);
  plan::StepBuilder sb(b);
  sb.add_attrs(attrs);
  b.Finish(sb.Finish());
  const plan::Step* step = flatbuffers::GetRoot<plan::Step>(b.GetBufferPointer());

  std::vector<rt::Tensor> in(inputs.size()), out(output_types.size());
  std::vector<std::vector<uint8_t>> out_storage(output_types.size());
  rt::KernelArgs args;
  args.node = node.Describe();
  args.attrs = rt::Attributes(step->attrs());
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (!inputs[i]) {
      args.inputs.push_back(nullptr);
      continue;
    }
    const ir::Tensor& t = *inputs[i];
    if (t.dtype() == ir::DType::kString || !t.has_data()) return Unimplemented(node.Describe() + ": cannot evaluate string tensors");
    in[i].name = node.inputs()[i]->name();
    in[i].dtype = DataType(ir::DTypeToOnnx(t.dtype()));
    in[i].dims = t.dims();
    in[i].numel = t.NumElements();
    in[i].bytes = t.buffer().size();
    in[i].data = const_cast<uint8_t*>(t.buffer().data());  // kernels only read inputs here (no in-place)
    in[i].is_constant = true;
    args.inputs.push_back(&in[i]);
  }
  for (size_t i = 0; i < output_types.size(); ++i) {
    const ir::Type& ty = output_types[i];
    if (!ty.is_tensor() || !ty.shape().is_static() || ty.dtype() == ir::DType::kString || ty.dtype() == ir::DType::kUndefined)
      return Unimplemented(node.Describe() + ": output " + std::to_string(i) + " has no static numeric type");
    for (const auto& d : ty.shape().dims()) out[i].dims.push_back(d.value());
    out[i].name = node.outputs()[i] ? node.outputs()[i]->name() : "";
    out[i].dtype = DataType(ir::DTypeToOnnx(ty.dtype()));
    out[i].numel = *ty.shape().NumElements();
    out[i].bytes = size_t(out[i].numel) * DataTypeSize(out[i].dtype);
    out_storage[i].resize(out[i].bytes);
    out[i].data = out_storage[i].data();
    args.outputs.push_back(node.outputs()[i] ? &out[i] : nullptr);
  }
  std::vector<rt::Tensor*> by_slot;
  for (int slot : KernelInputOrder(node, opset)) by_slot.push_back(slot < 0 || size_t(slot) >= args.inputs.size() ? nullptr : args.inputs[size_t(slot)]);
  args.inputs = std::move(by_slot);
  PRECIS_RETURN_IF_ERROR(evaluate(kernel_name, args));
  std::vector<ir::Tensor> results;
  for (size_t i = 0; i < output_types.size(); ++i)
    results.emplace_back(output_types[i].dtype(), out[i].dims, ir::Buffer::Own(std::move(out_storage[i])));
  return results;
}

}  // namespace precis::ops
