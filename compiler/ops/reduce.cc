// Operator semantics: the Reduce* family, ArgMax/ArgMin and the Softmax family (Softmax,
// LogSoftmax, Hardmax). CumSum, TopK and Einsum live in reduce_more.cc.
//
// Reduce* axes: an attribute before the version that moved them to input 1 (ReduceSum 13, the
// others 18), input 1 from then on. Empty axes reduce everything unless noop_with_empty_axes is
// set, in which case every axis is kept (each output is the reduction of a single element, as
// the ONNX reference computes it: ReduceSumSquare squares, ReduceL1 takes |x|, ...). The output
// shape depends on the axes, so input 1 must be a compile-time constant, except when its static
// length alone decides the shape: 0 (no axes) or the input rank (all axes; the kernel checks the
// values at run time).
#include <algorithm>

#include "compiler/ops/infer_helpers.h"
#include "compiler/ops/op_registry.h"
#include "compiler/ops/shape_values.h"

namespace precis::ops {

void AddScanTopKEinsumOps(OpRegistry& r);  // reduce_more.cc

namespace {

bool IsNumeric(ir::DType t) { return ir::IsFloat(t) || ir::IsInteger(t); }

// Which axes of a rank-`rank` input a Reduce* node reduces (true = reduced).
StatusOr<std::vector<bool>> ReducedAxes(const InferContext& ctx, int64_t rank, int64_t axes_input_since) {
  std::vector<int64_t> axes;
  bool noop = false;
  if (ctx.opset() >= axes_input_since) {
    noop = ctx.Int("noop_with_empty_axes", 0) != 0;
    if (ctx.has_input(1)) {
      if (ctx.input_constant(1)) {
        PRECIS_ASSIGN_OR_RETURN(axes, ctx.ConstantInts(1));
      } else {
        const ir::Type& t = ctx.input_type(1);
        std::optional<int64_t> count = t.is_tensor() && t.shape().has_rank() ? t.shape().NumElements() : std::nullopt;
        if (count && *count == rank && rank > 0) return std::vector<bool>(size_t(rank), true);
        if (!count || *count != 0)
          return ctx.Unsupported("the reduced axes (input 1 '" + ctx.node().inputs()[1]->name() +
                                 "') are computed at run time, but the output shape depends on them");
      }
    }
  } else if (auto a = ctx.Ints("axes")) {
    axes = *a;
  }
  if (axes.empty()) return std::vector<bool>(size_t(rank), !noop);
  std::vector<bool> reduced(size_t(rank), false);
  for (int64_t a : axes) {
    if (a < -rank || a >= rank)
      return ctx.Error("axis " + std::to_string(a) + " is out of range for rank " + std::to_string(rank));
    int64_t n = a < 0 ? a + rank : a;
    if (reduced[size_t(n)]) return ctx.Error("axis " + std::to_string(a) + " is given twice");
    reduced[size_t(n)] = true;
  }
  return reduced;
}

template <int64_t kAxesInputSince, bool kAllowBool>
Status InferReduce(InferContext& ctx) {
  PRECIS_ASSIGN_OR_RETURN(auto dims, ctx.InputDims(0));
  ir::DType dt = ctx.input_dtype(0);
  if (!IsNumeric(dt) && !(kAllowBool && dt == ir::DType::kBool))
    return ctx.Unsupported("input dtype " + std::string(ir::DTypeName(dt)) + " is not supported");
  int64_t rank = int64_t(dims.size());
  bool keepdims = ctx.Int("keepdims", 1) != 0;
  if (ctx.opset() >= kAxesInputSince && ctx.has_input(1) && !ctx.input_constant(1)) {
    // Axes as run-time values (some of the axes: all or none need no values): a reduced dim
    // becomes 1 or goes; the kernel reads the axes when it runs.
    auto values = ctx.ShapeValues(1);
    auto in_e = DimExprsOf(dims);
    if (values.ok() && AnyValueSymbols(*values) && int64_t(values->size()) < rank && in_e) {
      DimExprs axes;
      for (const ir::DimExpr& a : *values)
        if (auto n = AxisValue(a, rank)) axes.push_back(*n);
      if (axes.size() != values->size()) return ctx.Unsupported("its axes are run-time values it cannot follow");
      std::optional<DimExprs> out_e;
      if (keepdims) {
        out_e.emplace();
        for (int64_t j = 0; j < rank && out_e; ++j) {
          auto among = IsAmong(axes, j);
          auto d = among ? ir::DimExpr::Select(*among, ir::DimExpr::Constant(1), (*in_e)[size_t(j)]) : std::nullopt;
          if (d) out_e->push_back(*d);
          else out_e.reset();
        }
      } else {
        out_e = DropAxes(*in_e, axes);
      }
      if (!out_e) return ctx.Unsupported("its axes are run-time values it cannot follow");
      ctx.SetOutput(0, dt, ToDims(*out_e));
      return Status::Ok();
    }
  }
  PRECIS_ASSIGN_OR_RETURN(auto reduced, ReducedAxes(ctx, rank, kAxesInputSince));
  std::vector<ir::Dim> out;
  for (int64_t d = 0; d < rank; ++d) {
    if (!reduced[size_t(d)]) out.push_back(dims[size_t(d)]);
    else if (keepdims) out.push_back(ir::Dim::Static(1));
  }
  ctx.SetOutput(0, dt, out);
  return Status::Ok();
}

Status InferArgReduce(InferContext& ctx) {
  PRECIS_ASSIGN_OR_RETURN(auto dims, ctx.InputDims(0));
  if (!IsNumeric(ctx.input_dtype(0)))
    return ctx.Unsupported("input dtype " + std::string(ir::DTypeName(ctx.input_dtype(0))) + " is not supported");
  int64_t rank = int64_t(dims.size());
  if (rank == 0) return ctx.Error("input must have rank >= 1");
  PRECIS_ASSIGN_OR_RETURN(int64_t axis, NormalizeAxis(ctx.Int("axis", 0), rank, ctx));
  const ir::Dim& n = dims[size_t(axis)];
  if (n.is_static() && n.value() == 0) return ctx.Error("the reduced axis has size 0");
  if (ctx.Int("keepdims", 1) != 0) dims[size_t(axis)] = ir::Dim::Static(1);
  else dims.erase(dims.begin() + axis);
  ctx.SetOutput(0, ir::DType::kI64, dims);
  return Status::Ok();
}

// Softmax, LogSoftmax, Hardmax: float types; before opset 13 the axis (default 1) splits the
// input into a 2-D matrix, from 13 on it names the one normalized axis (default -1).
Status InferSoftmaxLike(InferContext& ctx) {
  PRECIS_ASSIGN_OR_RETURN(auto dims, ctx.InputDims(0));
  if (!ir::IsFloat(ctx.input_dtype(0)))
    return ctx.Unsupported("input dtype " + std::string(ir::DTypeName(ctx.input_dtype(0))) + " is not supported");
  int64_t rank = int64_t(dims.size());
  bool legacy = ctx.opset() < 13;
  int64_t axis = ctx.Int("axis", legacy ? 1 : -1);
  if (legacy ? (axis < -rank || axis > rank) : (axis < -rank || axis >= rank))
    return ctx.Error("axis " + std::to_string(axis) + " is out of range for rank " + std::to_string(rank));
  ctx.SetOutput(0, ctx.input_type(0));
  return Status::Ok();
}

}  // namespace

void RegisterReduceOps(OpRegistry& r) {
  r.Register({"", "ReduceSum", 1, INT_MAX, InferReduce<13, false>, true, -1, "", PrecisionClass::kKeepFp32});
  r.Register({"", "ReduceMean", 1, INT_MAX, InferReduce<18, false>, true, -1, "", PrecisionClass::kKeepFp32});
  r.Register({"", "ReduceMax", 1, INT_MAX, InferReduce<18, true>, true, -1, "", PrecisionClass::kKeepFp32});
  r.Register({"", "ReduceMin", 1, INT_MAX, InferReduce<18, true>, true, -1, "", PrecisionClass::kKeepFp32});
  r.Register({"", "ReduceProd", 1, INT_MAX, InferReduce<18, false>, true, -1, "", PrecisionClass::kKeepFp32});
  r.Register({"", "ReduceL1", 1, INT_MAX, InferReduce<18, false>, true, -1, "", PrecisionClass::kKeepFp32});
  r.Register({"", "ReduceL2", 1, INT_MAX, InferReduce<18, false>, true, -1, "", PrecisionClass::kKeepFp32});
  r.Register({"", "ReduceSumSquare", 1, INT_MAX, InferReduce<18, false>, true, -1, "", PrecisionClass::kKeepFp32});
  r.Register({"", "ReduceLogSum", 1, INT_MAX, InferReduce<18, false>, true, -1, "", PrecisionClass::kKeepFp32});
  r.Register({"", "ReduceLogSumExp", 1, INT_MAX, InferReduce<18, false>, true, -1, "", PrecisionClass::kKeepFp32});
  r.Register({"", "ArgMax", 1, INT_MAX, InferArgReduce, true, -1, "", PrecisionClass::kKeepFp32});
  r.Register({"", "ArgMin", 1, INT_MAX, InferArgReduce, true, -1, "", PrecisionClass::kKeepFp32});
  // The kernels read each row completely before writing it, element by element: safe in place.
  r.Register({"", "Softmax", 1, INT_MAX, InferSoftmaxLike, true, 0, "", PrecisionClass::kKeepFp32});
  r.Register({"", "LogSoftmax", 1, INT_MAX, InferSoftmaxLike, true, 0, "", PrecisionClass::kKeepFp32});
  r.Register({"", "Hardmax", 1, INT_MAX, InferSoftmaxLike, true, 0, "", PrecisionClass::kKeepFp32});
  AddScanTopKEinsumOps(r);
}

}  // namespace precis::ops
