// Operator semantics: the loss family, NegativeLogLikelihoodLoss and SoftmaxCrossEntropyLoss
// (both since opset 12). Input 0 is [N, C, d1..dk] (float), input 1 the class indices
// [N, d1..dk] (int32/int64), optional input 2 per-class weights [C] (input 0's dtype).
// Output 0 is the loss: [N, d1..dk] for reduction "none", a scalar for "sum" and "mean".
// SoftmaxCrossEntropyLoss's optional output 1 is the log-probabilities (LogSoftmax over axis 1)
// with the scores' type. Label values are checked by the kernel at run time.
#include "compiler/ops/infer_helpers.h"
#include "compiler/ops/op_registry.h"

namespace precis::ops {
namespace {

Status InferLoss(InferContext& ctx) {
  PRECIS_ASSIGN_OR_RETURN(auto dims, ctx.InputDims(0));
  ir::DType dtype = ctx.input_dtype(0);
  if (!ir::IsFloat(dtype))
    return ctx.Unsupported("input dtype " + std::string(ir::DTypeName(dtype)) + " is not supported");
  if (dims.size() < 2) return ctx.Error("input 0 must have rank >= 2 ([N, C, ...]), got rank " + std::to_string(dims.size()));
  if (!ctx.has_input(1)) return ctx.Error("needs a target input");
  ir::DType tt = ctx.input_dtype(1);
  if (tt != ir::DType::kI32 && tt != ir::DType::kI64)
    return ctx.Unsupported("target dtype " + std::string(ir::DTypeName(tt)) + " is not supported (int32/int64)");
  PRECIS_ASSIGN_OR_RETURN(auto tdims, ctx.InputDims(1));
  if (tdims.size() + 1 != dims.size())
    return ctx.Error("target rank " + std::to_string(tdims.size()) + " must be input rank " +
                     std::to_string(dims.size()) + " minus 1");
  // Per-element dims: input dims without C, refined by the target's dims.
  std::vector<ir::Dim> out;
  for (size_t i = 0; i < dims.size(); ++i) {
    if (i == 1) continue;
    const ir::Dim& a = dims[i];
    const ir::Dim& b = tdims[out.size()];
    if (a.is_static() && b.is_static() && a.value() != b.value())
      return ctx.Error("target dim " + std::to_string(out.size()) + " (" + std::to_string(b.value()) +
                       ") differs from the input's (" + std::to_string(a.value()) + ")");
    out.push_back(a.is_static() || b.is_unknown() ? a : b);
  }
  if (ctx.has_input(2)) {
    if (ctx.input_dtype(2) != dtype) return ctx.Error("weight dtype differs from the input's");
    PRECIS_ASSIGN_OR_RETURN(auto wdims, ctx.InputDims(2));
    if (wdims.size() != 1) return ctx.Error("weight must be 1-D [C]");
    if (wdims[0].is_static() && dims[1].is_static() && wdims[0].value() != dims[1].value())
      return ctx.Error("weight length " + std::to_string(wdims[0].value()) + " differs from C = " +
                       std::to_string(dims[1].value()));
  }
  std::string reduction = ctx.String("reduction", "mean");
  if (reduction != "none" && reduction != "sum" && reduction != "mean")
    return ctx.Error("reduction '" + reduction + "' is not one of none, sum, mean");
  if (reduction == "none") ctx.SetOutput(0, dtype, out);
  else ctx.SetOutput(0, dtype, {});
  if (ctx.num_outputs() > 1) ctx.SetOutput(1, ctx.input_type(0));
  return Status::Ok();
}

Status InferNll(InferContext& ctx) {
  if (ctx.num_outputs() > 1) return ctx.Error("has one output");
  return InferLoss(ctx);
}

}  // namespace

void RegisterLossOps(OpRegistry& r) {
  r.Register({"", "NegativeLogLikelihoodLoss", 12, INT_MAX, InferNll, true, -1, "", PrecisionClass::kKeepFp32});
  r.Register({"", "SoftmaxCrossEntropyLoss", 12, INT_MAX, InferLoss, true, -1, "", PrecisionClass::kKeepFp32});
}

}  // namespace precis::ops
