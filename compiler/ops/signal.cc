// Operator semantics: signal generators. HannWindow, HammingWindow and BlackmanWindow (length given
// as a scalar input), MelWeightMatrix ([dft_length / 2 + 1, num_mel_bins]). Their lengths are
// input values: constants, or value symbols bound at run time (docs/dynamic-shapes.md).
#include "compiler/ops/op_registry.h"

namespace precis::ops {
namespace {

StatusOr<ir::DType> OutputDType(InferContext& ctx) {
  const ir::Attribute* a = ctx.attr("output_datatype");
  if (!a) return ir::DType::kF32;
  auto t = ir::DTypeFromOnnx(int32_t(a->i));
  if (!t.ok() || (!ir::IsFloat(*t) && !ir::IsInteger(*t))) return ctx.Unsupported("output_datatype " + std::to_string(a->i));
  return *t;
}

// One scalar integer input's value as a dim expression.
StatusOr<ir::DimExpr> ScalarValue(InferContext& ctx, size_t i, const char* what) {
  if (!ir::IsInteger(ctx.input_dtype(i))) return ctx.Error(std::string(what) + " must be an integer");
  PRECIS_ASSIGN_OR_RETURN(auto v, ctx.ShapeValues(i));
  if (v.size() != 1) return ctx.Error(std::string(what) + " must hold one value");
  if (v[0].is_constant() && v[0].constant() < 0) return ctx.Error(std::string(what) + " is negative");
  return v[0];
}

Status InferWindow(InferContext& ctx) {
  PRECIS_ASSIGN_OR_RETURN(auto size, ScalarValue(ctx, 0, "size"));
  PRECIS_ASSIGN_OR_RETURN(auto dtype, OutputDType(ctx));
  ctx.SetOutput(0, dtype, {size.ToDim()});
  return Status::Ok();
}

Status InferMelWeightMatrix(InferContext& ctx) {
  PRECIS_ASSIGN_OR_RETURN(auto bins, ScalarValue(ctx, 0, "num_mel_bins"));
  PRECIS_ASSIGN_OR_RETURN(auto dft, ScalarValue(ctx, 1, "dft_length"));
  PRECIS_ASSIGN_OR_RETURN(auto rate, ScalarValue(ctx, 2, "sample_rate"));
  (void)rate;
  for (size_t i : {size_t(3), size_t(4)})
    if (!ir::IsFloat(ctx.input_dtype(i))) return ctx.Error("the edge frequencies must be floats");
  PRECIS_ASSIGN_OR_RETURN(auto dtype, OutputDType(ctx));
  auto half = dft.FloorDiv(2);
  auto rows = half ? half->Add(ir::DimExpr::Constant(1)) : std::nullopt;
  ctx.SetOutput(0, dtype, {rows ? rows->ToDim() : ir::Dim(), bins.ToDim()});
  return Status::Ok();
}

}  // namespace

void RegisterSignalOps(OpRegistry& r) {
  for (const char* op : {"HannWindow", "HammingWindow", "BlackmanWindow"})
    r.Register({"", op, 17, INT_MAX, InferWindow, true, -1, "", PrecisionClass::kUntouched});
  r.Register({"", "MelWeightMatrix", 17, INT_MAX, InferMelWeightMatrix, true, -1, "", PrecisionClass::kUntouched});
}

}  // namespace precis::ops
