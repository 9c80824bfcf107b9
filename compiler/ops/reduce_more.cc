// Operator semantics: CumSum, CumProd, TopK and Einsum (the rest of the reduce family, see reduce.cc).
//
// CumSum keeps its input's shape, so its axis input may be computed at run time. TopK's output
// size along the axis is k: from opset 10 on k is input 1 and must be a compile-time constant.
// Einsum parses its equation with the same parser as its kernels (runtime/kernels/einsum.h); a
// label's size comes from the first input that gives it statically, and
// ellipsis dimensions broadcast like numpy.
#include "compiler/ops/infer_helpers.h"
#include "compiler/ops/op_registry.h"
#include "runtime/kernels/einsum.h"

namespace precis::ops {
namespace {

bool IsNumeric(ir::DType t) { return ir::IsFloat(t) || ir::IsInteger(t); }

Status InferCumSum(InferContext& ctx) {
  PRECIS_ASSIGN_OR_RETURN(auto dims, ctx.InputDims(0));
  if (!IsNumeric(ctx.input_dtype(0)))
    return ctx.Unsupported("input dtype " + std::string(ir::DTypeName(ctx.input_dtype(0))) + " is not supported");
  if (!ctx.has_input(1)) return ctx.Error("the axis input is missing");
  if (dims.empty()) return ctx.Error("input must have rank >= 1");
  if (ctx.input_constant(1)) {
    PRECIS_ASSIGN_OR_RETURN(auto axis, ctx.ConstantInts(1));
    if (axis.size() != 1) return ctx.Error("axis must hold one value");
    PRECIS_RETURN_IF_ERROR(NormalizeAxis(axis[0], int64_t(dims.size()), ctx).status());
  }
  ctx.SetOutput(0, ctx.input_type(0));
  return Status::Ok();
}

Status InferTopK(InferContext& ctx) {
  PRECIS_ASSIGN_OR_RETURN(auto dims, ctx.InputDims(0));
  if (!IsNumeric(ctx.input_dtype(0)))
    return ctx.Unsupported("input dtype " + std::string(ir::DTypeName(ctx.input_dtype(0))) + " is not supported");
  if (dims.empty()) return ctx.Error("input must have rank >= 1");
  PRECIS_ASSIGN_OR_RETURN(int64_t axis, NormalizeAxis(ctx.Int("axis", -1), int64_t(dims.size()), ctx));
  int64_t k = 0;
  if (ctx.opset() < 10) {
    k = ctx.Int("k", -1);
  } else {
    if (!ctx.has_input(1)) return ctx.Error("the k input is missing");
    if (!ctx.input_constant(1)) {
      // k as a run-time value (the kernel takes k from the output dim and checks it).
      auto values = ctx.ShapeValues(1);
      if (values.ok() && values->size() == 1 && (*values)[0].HasValueSymbols()) {
        dims[size_t(axis)] = (*values)[0].ToDim();
        ctx.SetOutput(0, ctx.input_dtype(0), dims);
        ctx.SetOutput(1, ir::DType::kI64, dims);
        return Status::Ok();
      }
      return ctx.Unsupported("k (input 1 '" + ctx.node().inputs()[1]->name() +
                             "') is computed at run time, but the output shape depends on it");
    }
    PRECIS_ASSIGN_OR_RETURN(auto ks, ctx.ConstantInts(1));
    if (ks.size() != 1) return ctx.Error("k must hold one value");
    k = ks[0];
  }
  if (k < 0) return ctx.Error("k is " + std::to_string(k) + ", expected >= 0");
  const ir::Dim& n = dims[size_t(axis)];
  if (n.is_static() && k > n.value())
    return ctx.Error("k = " + std::to_string(k) + " exceeds the axis size " + std::to_string(n.value()));
  dims[size_t(axis)] = ir::Dim::Static(k);
  ctx.SetOutput(0, ctx.input_dtype(0), dims);
  ctx.SetOutput(1, ir::DType::kI64, dims);
  return Status::Ok();
}

Status InferEinsum(InferContext& ctx) {
  if (ctx.num_inputs() == 0) return ctx.Error("needs at least one input");
  std::vector<std::vector<ir::Dim>> dims;
  std::vector<int64_t> ranks;
  for (size_t i = 0; i < ctx.num_inputs(); ++i) {
    PRECIS_ASSIGN_OR_RETURN(auto d, ctx.InputDims(i));
    if (ctx.input_dtype(i) != ctx.input_dtype(0)) return ctx.Error("input dtypes differ");
    ranks.push_back(int64_t(d.size()));
    dims.push_back(std::move(d));
  }
  if (!IsNumeric(ctx.input_dtype(0)))
    return ctx.Unsupported("input dtype " + std::string(ir::DTypeName(ctx.input_dtype(0))) + " is not supported");
  auto spec = rt::ParseEinsum(ctx.String("equation", ""), ranks);
  if (!spec.ok()) return ctx.Error(spec.status().message());
  // Letter labels must agree; ellipsis labels broadcast (size 1 yields to any other).
  std::vector<std::optional<ir::Dim>> size(size_t(rt::kEllipsisLabel + spec->ellipsis_rank));
  for (size_t i = 0; i < dims.size(); ++i)
    for (size_t d = 0; d < dims[i].size(); ++d) {
      const ir::Dim& x = dims[i][d];
      std::optional<ir::Dim>& s = size[size_t(spec->inputs[i][d])];
      if (!s) {
        s = x;
        continue;
      }
      if (spec->inputs[i][d] >= rt::kEllipsisLabel) {
        if (x.is_static() && x.value() == 1) continue;
        if (s->is_static() && s->value() == 1) {
          s = x;
          continue;
        }
      }
      if (s->is_static() && x.is_static() && s->value() != x.value())
        return ctx.Error("operand " + std::to_string(i) + " dimension " + std::to_string(d) + " has size " +
                         std::to_string(x.value()) + ", but its label has size " + std::to_string(s->value()));
      if (!s->is_static() && x.is_static()) s = x;
    }
  std::vector<ir::Dim> out;
  for (int l : spec->output) out.push_back(*size[size_t(l)]);
  ctx.SetOutput(0, ctx.input_dtype(0), out);
  return Status::Ok();
}

}  // namespace

void AddScanTopKEinsumOps(OpRegistry& r) {
  // CumSum runs along its axis reading each element before writing the same position.
  r.Register({"", "CumSum", 11, INT_MAX, InferCumSum, true, 0, "", PrecisionClass::kKeepFp32});
  r.Register({"", "CumProd", 26, INT_MAX, InferCumSum, true, 0, "", PrecisionClass::kKeepFp32});
  r.Register({"", "TopK", 1, INT_MAX, InferTopK, true, -1, "", PrecisionClass::kPassthrough});
  r.Register({"", "Einsum", 12, INT_MAX, InferEinsum, true, -1, "", PrecisionClass::kCompute});
}

}  // namespace precis::ops
