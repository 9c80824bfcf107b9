// Common shape inference functions.
#include "compiler/ops/infer_helpers.h"

namespace precis::ops {

Status InferSameAsInput0(InferContext& ctx) {
  if (!ctx.has_input(0)) return ctx.Error("input 0 is missing");
  ctx.SetOutput(0, ctx.input_type(0));
  return Status::Ok();
}

static Status BroadcastAll(InferContext& ctx, size_t count, std::vector<ir::Dim>& out) {
  bool first = true;
  for (size_t i = 0; i < count; ++i) {
    if (!ctx.has_input(i)) continue;
    PRECIS_ASSIGN_OR_RETURN(auto dims, ctx.InputDims(i));
    if (first) {
      out = dims;
      first = false;
      continue;
    }
    auto b = BroadcastDims(out, dims);
    if (!b.ok()) return ctx.Error(b.status().message());
    out = *b;
  }
  if (first) return ctx.Error("has no inputs");
  return Status::Ok();
}

Status InferBroadcastBinary(InferContext& ctx) {
  if (!ctx.has_input(0) || !ctx.has_input(1)) return ctx.Error("needs two inputs");
  if (ctx.input_dtype(0) != ctx.input_dtype(1) && ctx.input_dtype(0) != ir::DType::kUndefined &&
      ctx.input_dtype(1) != ir::DType::kUndefined)
    return ctx.Error(std::string("input dtypes differ: ") + std::string(ir::DTypeName(ctx.input_dtype(0))) + " and " +
                     std::string(ir::DTypeName(ctx.input_dtype(1))));
  std::vector<ir::Dim> dims;
  PRECIS_RETURN_IF_ERROR(BroadcastAll(ctx, 2, dims));
  ctx.SetOutput(0, ctx.input_dtype(0), dims);
  return Status::Ok();
}

Status InferBroadcastCompare(InferContext& ctx) {
  std::vector<ir::Dim> dims;
  PRECIS_RETURN_IF_ERROR(BroadcastAll(ctx, 2, dims));
  ctx.SetOutput(0, ir::DType::kBool, dims);
  return Status::Ok();
}

Status InferBroadcastVariadic(InferContext& ctx) {
  std::vector<ir::Dim> dims;
  PRECIS_RETURN_IF_ERROR(BroadcastAll(ctx, ctx.num_inputs(), dims));
  ctx.SetOutput(0, ctx.input_dtype(0), dims);
  return Status::Ok();
}

StatusOr<ir::DType> QuantProductDType(InferContext& ctx, size_t second, bool qlinear) {
  for (size_t i : {size_t(0), second})
    if (ctx.input_dtype(i) != ir::DType::kU8 && ctx.input_dtype(i) != ir::DType::kI8)
      return ctx.Unsupported("input " + std::to_string(i) + " has dtype " + std::string(ir::DTypeName(ctx.input_dtype(i))) + " (supported: int8, uint8)");
  if (!qlinear) return ir::DType::kI32;
  if (!ctx.has_input(7)) return ctx.Error("needs y_zero_point");
  ir::DType dtype = ctx.input_dtype(7);
  if (dtype != ir::DType::kU8 && dtype != ir::DType::kI8) return ctx.Unsupported("output dtype " + std::string(ir::DTypeName(dtype)));
  return dtype;
}

Status CheckLegacyBroadcast(const InferContext& ctx) {
  if (ctx.opset() >= 7) return Status::Ok();
  if (ctx.Int("broadcast", 0) != 0 && ctx.attr("axis"))
    return ctx.Error("legacy broadcasting with an axis attribute was not rewritten");  // ops/expand.cc does
  if (ctx.Int("broadcast", 0) == 0 && ctx.has_input(0) && ctx.has_input(1) && ctx.input_type(0).is_tensor() &&
      ctx.input_type(1).is_tensor() && ctx.input_type(0).shape().has_rank() && ctx.input_type(1).shape().has_rank() &&
      ctx.input_type(0).shape().is_static() && ctx.input_type(1).shape().is_static() &&
      !(ctx.input_type(0).shape() == ctx.input_type(1).shape()))
    return ctx.Error("operand shapes differ and broadcast is 0 (opset < 7)");
  return Status::Ok();
}

Status InferArithmetic(InferContext& ctx) {
  PRECIS_RETURN_IF_ERROR(CheckLegacyBroadcast(ctx));
  return InferBroadcastBinary(ctx);
}

}  // namespace precis::ops
