// Operator semantics: quantization. QuantizeLinear and DequantizeLinear (per tensor, per axis, or
// in blocks along an axis from opset 21), DynamicQuantizeLinear; the integer products
// MatMulInteger/ConvInteger and QLinearMatMul/QLinearConv are registered with MatMul and Conv
// (matmul.cc, nn.cc). Quantized tensors are 8- or 16-bit integers; these operators take no part in
// mixed precision (their float inputs and outputs keep their dtypes).
#include "compiler/ops/op_registry.h"

namespace precis::ops {
namespace {

// 8- and 16-bit integers, and the storage types but float8 e8m0 (float8, float4, int4, int2).
bool IsQuantDType(ir::DType t) {
  return t == ir::DType::kU8 || t == ir::DType::kI8 || t == ir::DType::kU16 || t == ir::DType::kI16 || (ir::IsStorageType(t) && t != ir::DType::kF8E8M0);
}

// The scale (and zero point) shape against x: one value, one per index along `axis`, or x's shape
// with ceil(dim / block_size) along `axis`.
Status CheckQuantParams(InferContext& ctx, const std::vector<ir::Dim>& x) {
  PRECIS_ASSIGN_OR_RETURN(auto scale, ctx.InputDims(1));
  if (!ir::IsFloat(ctx.input_dtype(1))) return ctx.Error("the scale must be a float tensor");
  if (ctx.has_input(2)) {
    PRECIS_ASSIGN_OR_RETURN(auto zero, ctx.InputDims(2));
    // One value each may be a scalar and a [1] (per tensor either way).
    auto single = [](const std::vector<ir::Dim>& d) { return d.empty() || (d.size() == 1 && d[0].is_static() && d[0].value() == 1); };
    if (zero.size() != scale.size() && !(single(zero) && single(scale))) return ctx.Error("zero point and scale shapes differ");
  }
  int64_t rank = int64_t(x.size()), block = ctx.Int("block_size", 0);
  bool one = scale.empty() || (scale.size() == 1 && scale[0].is_static() && scale[0].value() == 1);
  if (one && block == 0) return Status::Ok();
  int64_t axis = ctx.Int("axis", 1);
  if (axis < -rank || axis >= rank) return ctx.Error("axis " + std::to_string(axis) + " is out of range for rank " + std::to_string(rank));
  if (axis < 0) axis += rank;
  const ir::Dim& d = x[size_t(axis)];
  if (block == 0) {
    if (scale.size() != 1 || (d.is_static() && scale[0].is_static() && scale[0].value() != d.value()))
      return ctx.Error("a per-axis scale must have one value per index of axis " + std::to_string(axis));
    return Status::Ok();
  }
  if (block < 0) return ctx.Error("block_size must be positive");
  if (int64_t(scale.size()) != rank) return ctx.Error("a blocked scale must have x's rank");
  return Status::Ok();
}

Status InferQuantizeLinear(InferContext& ctx) {
  PRECIS_ASSIGN_OR_RETURN(auto x, ctx.InputDims(0));
  ir::DType in = ctx.input_dtype(0);
  if (!ir::IsFloat(in) && in != ir::DType::kI32) return ctx.Error("x must be a float or int32 tensor");
  ir::DType out = ir::DType::kU8;
  if (ctx.has_input(2)) {
    out = ctx.input_dtype(2);
  } else if (const ir::Attribute* a = ctx.attr("output_dtype"); a && a->i != 0) {
    auto t = ir::DTypeFromOnnx(int32_t(a->i));
    if (!t.ok()) return ctx.Unsupported("output_dtype: " + t.status().message());
    out = *t;
  }
  if (!IsQuantDType(out)) return ctx.Unsupported("quantizing to " + std::string(ir::DTypeName(out)) + " (supported: 8- and 16-bit integers, int4, int2, float8, float4)");
  PRECIS_RETURN_IF_ERROR(CheckQuantParams(ctx, x));
  ctx.SetOutput(0, out, x);
  return Status::Ok();
}

Status InferDequantizeLinear(InferContext& ctx) {
  PRECIS_ASSIGN_OR_RETURN(auto x, ctx.InputDims(0));
  ir::DType in = ctx.input_dtype(0);
  if (!IsQuantDType(in) && in != ir::DType::kI32)
    return ctx.Unsupported("dequantizing " + std::string(ir::DTypeName(in)) + " (supported: 8-, 16- and 32-bit integers, int4, int2, float8, float4)");
  if (ctx.has_input(2) && ctx.input_dtype(2) != in) return ctx.Error("the zero point's dtype differs from x");
  PRECIS_RETURN_IF_ERROR(CheckQuantParams(ctx, x));
  ctx.SetOutput(0, ctx.input_dtype(1), x);
  return Status::Ok();
}

Status InferDynamicQuantizeLinear(InferContext& ctx) {
  PRECIS_ASSIGN_OR_RETURN(auto x, ctx.InputDims(0));
  if (ctx.input_dtype(0) != ir::DType::kF32) return ctx.Error("x must be float32");
  ctx.SetOutput(0, ir::DType::kU8, x);
  ctx.SetOutput(1, ir::DType::kF32, {});
  ctx.SetOutput(2, ir::DType::kU8, {});
  return Status::Ok();
}

}  // namespace

void RegisterQuantizeOps(OpRegistry& r) {
  r.Register({"", "QuantizeLinear", 10, INT_MAX, InferQuantizeLinear, true, -1, "", PrecisionClass::kUntouched});
  r.Register({"", "DequantizeLinear", 10, INT_MAX, InferDequantizeLinear, true, -1, "", PrecisionClass::kUntouched});
  r.Register({"", "DynamicQuantizeLinear", 11, INT_MAX, InferDynamicQuantizeLinear, true, -1, "", PrecisionClass::kUntouched});
}

}  // namespace precis::ops
