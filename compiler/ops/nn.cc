// Operator semantics: convolution and pooling (Conv, ConvTranspose, MaxPool, AveragePool, LpPool
// and the Global* pools). Normalizations live in nn_norm.cc and are registered from here.
//
// Output sizes follow ONNX's formulas: with explicit pads, out = floor((in + pads - eff_k) / s) + 1
// (ceil in ceil_mode, minus one when the last window would start in the end padding, as PyTorch,
// onnxruntime and the ONNX reference do); SAME_* gives ceil(in / s) with the total padding split
// evenly and the odd unit at the end (SAME_UPPER) or the beginning (SAME_LOWER); VALID uses no
// padding. Batch and channel dims pass through symbolically; a symbolic spatial dim gives the
// same formula with floor divisions (ir::DimExpr), except in ceil_mode. At most 3 spatial dims are accepted (the kernels' layout).
#include "compiler/ir/dim_expr.h"
#include "compiler/ops/infer_helpers.h"
#include "compiler/ops/op_registry.h"

namespace precis::ops {

void RegisterNnNormOps(OpRegistry& r);  // nn_norm.cc

namespace {

constexpr size_t kMaxSpatial = 3;

std::string Join(const std::vector<int64_t>& v) {
  std::string s = "[";
  for (size_t i = 0; i < v.size(); ++i) s += (i ? "," : "") + std::to_string(v[i]);
  return s + "]";
}

// Window attributes of a convolution or pooling node, normalized to n spatial dims.
struct WindowSpec {
  std::vector<int64_t> kernel, strides, dilations, pads;  // pads: n begins, then n ends
  std::string auto_pad = "NOTSET";
  bool ceil_mode = false;
};

Status ReadWindowSpec(const InferContext& ctx, size_t n, std::vector<int64_t> kernel, WindowSpec& w) {
  w.kernel = std::move(kernel);
  w.strides = ctx.Ints("strides").value_or(std::vector<int64_t>(n, 1));
  w.dilations = ctx.Ints("dilations").value_or(std::vector<int64_t>(n, 1));
  w.pads = ctx.Ints("pads").value_or(std::vector<int64_t>(2 * n, 0));
  w.auto_pad = ctx.String("auto_pad", "NOTSET");
  w.ceil_mode = ctx.Int("ceil_mode", 0) != 0;
  if (w.auto_pad.empty()) w.auto_pad = "NOTSET";
  if (w.auto_pad != "NOTSET" && w.auto_pad != "SAME_UPPER" && w.auto_pad != "SAME_LOWER" && w.auto_pad != "VALID")
    return ctx.Error("auto_pad '" + w.auto_pad + "' is not NOTSET, SAME_UPPER, SAME_LOWER or VALID");
  if (w.kernel.size() != n) return ctx.Error("kernel_shape " + Join(w.kernel) + " does not have " + std::to_string(n) + " spatial dims");
  if (w.strides.size() != n) return ctx.Error("strides " + Join(w.strides) + " does not have " + std::to_string(n) + " values");
  if (w.dilations.size() != n) return ctx.Error("dilations " + Join(w.dilations) + " does not have " + std::to_string(n) + " values");
  if (w.pads.size() != 2 * n) return ctx.Error("pads " + Join(w.pads) + " does not have " + std::to_string(2 * n) + " values");
  for (size_t i = 0; i < n; ++i) {
    if (w.kernel[i] == 0 || w.kernel[i] < -1) return ctx.Error("kernel_shape " + Join(w.kernel) + " must be positive");
    if (w.strides[i] <= 0) return ctx.Error("strides " + Join(w.strides) + " must be positive");
    if (w.dilations[i] <= 0) return ctx.Error("dilations " + Join(w.dilations) + " must be positive");
  }
  for (int64_t p : w.pads)
    if (p < 0) return ctx.Error("pads " + Join(w.pads) + " must not be negative");
  if (w.auto_pad != "NOTSET") w.pads.assign(2 * n, 0);
  return Status::Ok();
}

// Output size of spatial dim i for a symbolic input size (a dynamic plan's): SAME padding gives
// (in+s-1)/s, explicit padding (in+pb+pe-eff_k)/s+1, floor divisions (ir::DimExpr atoms). Unknown
// in ceil_mode (whether the last window starts in the end padding depends on the value).
ir::Dim SymbolicWindowOutput(const WindowSpec& w, size_t i, const ir::Dim& in_dim) {
  auto in = ir::DimExpr::FromDim(in_dim);
  if (!in) return ir::Dim();
  size_t n = w.kernel.size();
  int64_t s = w.strides[i], eff_k = (w.kernel[i] - 1) * w.dilations[i] + 1;
  if (s <= 0) return ir::Dim();
  std::optional<ir::DimExpr> out;
  if (w.auto_pad == "SAME_UPPER" || w.auto_pad == "SAME_LOWER") {
    auto num = in->Add(ir::DimExpr::Constant(s - 1));
    out = num ? num->FloorDiv(s) : std::nullopt;
  } else {
    if (w.ceil_mode) return ir::Dim();  // the last window may start in the end padding
    auto span = in->Add(ir::DimExpr::Constant(w.pads[i] + w.pads[i + n] - eff_k));
    auto q = span ? span->FloorDiv(s) : std::nullopt;
    out = q ? q->Add(ir::DimExpr::Constant(1)) : std::nullopt;
  }
  return out ? out->ToDim() : ir::Dim();
}

// Output size of spatial dim i for input size `in` (static); kernel[i] == -1 means unknown.
StatusOr<ir::Dim> WindowOutput(const InferContext& ctx, const WindowSpec& w, size_t i, const ir::Dim& in_dim) {
  if (w.kernel[i] < 0) return ir::Dim();
  if (in_dim.is_symbolic()) return SymbolicWindowOutput(w, i, in_dim);
  if (!in_dim.is_static()) return ir::Dim();
  size_t n = w.kernel.size();
  int64_t in = in_dim.value(), s = w.strides[i];
  int64_t eff_k = (w.kernel[i] - 1) * w.dilations[i] + 1;
  int64_t pb = w.pads[i], pe = w.pads[i + n];
  if (w.auto_pad == "SAME_UPPER" || w.auto_pad == "SAME_LOWER") {
    int64_t out = (in + s - 1) / s;
    int64_t total = std::max<int64_t>(0, (out - 1) * s + eff_k - in);
    pb = w.auto_pad == "SAME_UPPER" ? total / 2 : total - total / 2;
    pe = total - pb;
  }
  int64_t span = in + pb + pe - eff_k;
  if (span < 0)
    return ctx.Error("window of " + std::to_string(eff_k) + " (kernel " + std::to_string(w.kernel[i]) + ", dilation " +
                     std::to_string(w.dilations[i]) + ") does not fit spatial dim " + std::to_string(i) + " of size " +
                     std::to_string(in) + " with padding " + std::to_string(pb) + "+" + std::to_string(pe));
  int64_t out = w.ceil_mode ? (span + s - 1) / s + 1 : span / s + 1;
  if (w.ceil_mode && (out - 1) * s >= in + pb) --out;
  return ir::Dim::Static(out);
}

Status RequireFloat(const InferContext& ctx, size_t i) {
  ir::DType t = ctx.input_dtype(i);
  if (t != ir::DType::kUndefined && !ir::IsFloat(t))
    return ctx.Error("input " + std::to_string(i) + " has dtype " + std::string(ir::DTypeName(t)) + ", expected a float type");
  return Status::Ok();
}

// X: [N, C, spatial...] with 1..3 spatial dims.
StatusOr<std::vector<ir::Dim>> SpatialInput(const InferContext& ctx) {
  PRECIS_ASSIGN_OR_RETURN(auto x, ctx.InputDims(0));
  if (x.size() < 3) return ctx.Error("input X has rank " + std::to_string(x.size()) + ", expected N x C x spatial dims");
  if (x.size() - 2 > kMaxSpatial)
    return ctx.Unsupported(std::to_string(x.size() - 2) + " spatial dims (at most " + std::to_string(kMaxSpatial) + " supported)");
  return x;
}

// Kernel shape: the attribute, else W's spatial dims (-1 where symbolic); checked against W.
StatusOr<std::vector<int64_t>> ConvKernel(const InferContext& ctx, const std::vector<ir::Dim>& w) {
  std::vector<int64_t> from_w;
  for (size_t i = 2; i < w.size(); ++i) from_w.push_back(w[i].is_static() ? w[i].value() : -1);
  auto attr = ctx.Ints("kernel_shape");
  if (!attr) return from_w;
  if (attr->size() != from_w.size()) return ctx.Error("kernel_shape " + Join(*attr) + " does not match W's rank");
  for (size_t i = 0; i < from_w.size(); ++i)
    if (from_w[i] >= 0 && from_w[i] != (*attr)[i])
      return ctx.Error("kernel_shape " + Join(*attr) + " differs from W's spatial dims " + Join(from_w));
  return *attr;
}

Status CheckBias(const InferContext& ctx, const ir::Dim& channels) {
  if (!ctx.has_input(2)) return Status::Ok();
  PRECIS_ASSIGN_OR_RETURN(auto b, ctx.InputDims(2));
  if (b.size() != 1) return ctx.Error("bias B must have rank 1");
  if (b[0].is_static() && channels.is_static() && b[0].value() != channels.value())
    return ctx.Error("bias B has " + std::to_string(b[0].value()) + " values for " + std::to_string(channels.value()) + " output channels");
  if (ctx.input_dtype(2) != ctx.input_dtype(0)) return ctx.Error("bias B dtype differs from X");
  return Status::Ok();
}

// Conv's output dims [N, M, spatial...] for X [N, C, spatial...] and W [M, C/group, k...] (group,
// kernel_shape, strides, dilations, pads, auto_pad), with the channel checks.
StatusOr<std::vector<ir::Dim>> ConvOutputDims(const InferContext& ctx, const std::vector<ir::Dim>& x, const std::vector<ir::Dim>& w) {
  if (w.size() != x.size()) return ctx.Error("W has rank " + std::to_string(w.size()) + ", X has rank " + std::to_string(x.size()));
  int64_t group = ctx.Int("group", 1);
  if (group <= 0) return ctx.Error("group must be positive");
  if (x[1].is_static() && w[1].is_static() && x[1].value() != w[1].value() * group)
    return ctx.Error("X has " + std::to_string(x[1].value()) + " channels, W expects " + std::to_string(w[1].value()) + " x group " +
                     std::to_string(group));
  if (w[0].is_static() && w[0].value() % group != 0)
    return ctx.Error(std::to_string(w[0].value()) + " output channels are not divisible by group " + std::to_string(group));
  PRECIS_ASSIGN_OR_RETURN(auto kernel, ConvKernel(ctx, w));
  WindowSpec spec;
  PRECIS_RETURN_IF_ERROR(ReadWindowSpec(ctx, x.size() - 2, kernel, spec));
  spec.ceil_mode = false;
  std::vector<ir::Dim> out = {x[0], w[0]};
  for (size_t i = 0; i + 2 < x.size(); ++i) {
    PRECIS_ASSIGN_OR_RETURN(auto d, WindowOutput(ctx, spec, i, x[i + 2]));
    out.push_back(d);
  }
  return out;
}

Status InferConv(InferContext& ctx) {
  PRECIS_ASSIGN_OR_RETURN(auto x, SpatialInput(ctx));
  PRECIS_ASSIGN_OR_RETURN(auto w, ctx.InputDims(1));
  PRECIS_RETURN_IF_ERROR(RequireFloat(ctx, 0));
  if (ctx.input_dtype(1) != ctx.input_dtype(0)) return ctx.Error("W dtype differs from X");
  PRECIS_ASSIGN_OR_RETURN(auto out, ConvOutputDims(ctx, x, w));
  PRECIS_RETURN_IF_ERROR(CheckBias(ctx, w[0]));
  ctx.SetOutput(0, ctx.input_dtype(0), out);
  return Status::Ok();
}

// ConvInteger (X, W, zero points; int32 out) and QLinearConv (x, x_scale, x_zero_point, w,
// w_scale, w_zero_point, y_scale, y_zero_point, B; out typed as y_zero_point): 8-bit operands,
// Conv's shapes.
Status InferQuantConv(InferContext& ctx) {
  bool qlinear = ctx.node().op_type() == "QLinearConv";
  size_t wi = qlinear ? 3 : 1;
  PRECIS_ASSIGN_OR_RETURN(auto x, SpatialInput(ctx));
  PRECIS_ASSIGN_OR_RETURN(auto w, ctx.InputDims(wi));
  PRECIS_ASSIGN_OR_RETURN(ir::DType dtype, QuantProductDType(ctx, wi, qlinear));
  PRECIS_ASSIGN_OR_RETURN(auto out, ConvOutputDims(ctx, x, w));
  ctx.SetOutput(0, dtype, out);
  return Status::Ok();
}

// MaxUnpool: [N, C, (in - 1) * stride - pads + kernel ...], or output_shape (input 2, values
// that may be bound at run time).
Status InferMaxUnpool(InferContext& ctx) {
  PRECIS_ASSIGN_OR_RETURN(auto x, SpatialInput(ctx));
  PRECIS_ASSIGN_OR_RETURN(auto idx, ctx.InputDims(1));
  if (idx.size() != x.size() || !ir::IsInteger(ctx.input_dtype(1))) return ctx.Error("indices must be integers of X's shape");
  size_t n = x.size() - 2;
  auto kernel = ctx.Ints("kernel_shape");
  if (!kernel || kernel->size() != n) return ctx.Error("needs kernel_shape for each spatial dim");
  auto strides = ctx.Ints("strides").value_or(std::vector<int64_t>(n, 1));
  auto pads = ctx.Ints("pads").value_or(std::vector<int64_t>(2 * n, 0));
  if (strides.size() != n || pads.size() != 2 * n) return ctx.Error("strides and pads do not match the spatial dims");
  std::vector<ir::Dim> out = x;
  if (ctx.has_input(2)) {
    PRECIS_ASSIGN_OR_RETURN(auto shape, ctx.ShapeValues(2));
    if (shape.size() != x.size()) return ctx.Error("output_shape must have X's rank");
    for (size_t d = 0; d < shape.size(); ++d) out[d] = shape[d].ToDim();
  } else {
    for (size_t d = 0; d < n; ++d) {
      auto e = ir::DimExpr::FromDim(x[d + 2]);
      auto grown = e ? e->Sub(ir::DimExpr::Constant(1))->Mul(ir::DimExpr::Constant(strides[d])) : std::nullopt;
      auto v = grown ? grown->Add(ir::DimExpr::Constant((*kernel)[d] - pads[d] - pads[n + d])) : std::nullopt;
      out[d + 2] = v ? v->ToDim() : ir::Dim();
    }
  }
  ctx.SetOutput(0, ctx.input_dtype(0), out);
  return Status::Ok();
}

// ConvTranspose: W is [C, M/group, k...]; out = s*(in-1) + output_padding + eff_k - pads, or
// in*s for SAME_*, or the output_shape attribute (its last n values).
Status InferConvTranspose(InferContext& ctx) {
  PRECIS_ASSIGN_OR_RETURN(auto x, SpatialInput(ctx));
  PRECIS_ASSIGN_OR_RETURN(auto w, ctx.InputDims(1));
  PRECIS_RETURN_IF_ERROR(RequireFloat(ctx, 0));
  if (ctx.input_dtype(1) != ctx.input_dtype(0)) return ctx.Error("W dtype differs from X");
  if (w.size() != x.size()) return ctx.Error("W has rank " + std::to_string(w.size()) + ", X has rank " + std::to_string(x.size()));
  size_t n = x.size() - 2;
  int64_t group = ctx.Int("group", 1);
  if (group <= 0) return ctx.Error("group must be positive");
  if (x[1].is_static() && w[0].is_static() && x[1].value() != w[0].value())
    return ctx.Error("X has " + std::to_string(x[1].value()) + " channels, W has " + std::to_string(w[0].value()));
  if (w[0].is_static() && w[0].value() % group != 0)
    return ctx.Error(std::to_string(w[0].value()) + " input channels are not divisible by group " + std::to_string(group));
  ir::Dim channels = w[1].is_static() ? ir::Dim::Static(w[1].value() * group) : ir::Dim();
  PRECIS_RETURN_IF_ERROR(CheckBias(ctx, channels));
  PRECIS_ASSIGN_OR_RETURN(auto kernel, ConvKernel(ctx, w));
  WindowSpec spec;
  PRECIS_RETURN_IF_ERROR(ReadWindowSpec(ctx, n, kernel, spec));
  auto output_padding = ctx.Ints("output_padding").value_or(std::vector<int64_t>(n, 0));
  if (output_padding.size() != n) return ctx.Error("output_padding " + Join(output_padding) + " does not have " + std::to_string(n) + " values");
  for (size_t i = 0; i < n; ++i)
    if (output_padding[i] < 0) return ctx.Error("output_padding must not be negative");
  auto output_shape = ctx.Ints("output_shape");
  if (output_shape && output_shape->size() != n && output_shape->size() != n + 2)
    return ctx.Error("output_shape " + Join(*output_shape) + " does not have " + std::to_string(n) + " spatial values");
  std::vector<ir::Dim> out = {x[0], channels};
  for (size_t i = 0; i < n; ++i) {
    if (output_shape) {
      int64_t v = (*output_shape)[output_shape->size() - n + i];
      if (v <= 0) return ctx.Error("output_shape " + Join(*output_shape) + " must be positive");
      out.push_back(ir::Dim::Static(v));
      continue;
    }
    if (!x[i + 2].is_static() || kernel[i] < 0) {
      out.push_back(ir::Dim());
      continue;
    }
    int64_t in = x[i + 2].value(), v;
    if (spec.auto_pad == "SAME_UPPER" || spec.auto_pad == "SAME_LOWER") {
      v = in * spec.strides[i];
    } else {
      int64_t eff_k = (kernel[i] - 1) * spec.dilations[i] + 1;
      v = spec.strides[i] * (in - 1) + output_padding[i] + eff_k - spec.pads[i] - spec.pads[i + n];
    }
    if (v <= 0) return ctx.Error("output spatial dim " + std::to_string(i) + " would be " + std::to_string(v));
    out.push_back(ir::Dim::Static(v));
  }
  ctx.SetOutput(0, ctx.input_dtype(0), out);
  return Status::Ok();
}

enum class PoolKind { kMax, kAverage, kLp };

Status InferPool(InferContext& ctx, PoolKind kind) {
  PRECIS_ASSIGN_OR_RETURN(auto x, SpatialInput(ctx));
  ir::DType t = ctx.input_dtype(0);
  bool int8_ok = kind == PoolKind::kMax && (t == ir::DType::kI8 || t == ir::DType::kU8);
  if (!int8_ok) PRECIS_RETURN_IF_ERROR(RequireFloat(ctx, 0));
  auto kernel = ctx.Ints("kernel_shape");
  if (!kernel) return ctx.Error("attribute kernel_shape is required");
  for (int64_t k : *kernel)
    if (k <= 0) return ctx.Error("kernel_shape " + Join(*kernel) + " must be positive");
  WindowSpec spec;
  PRECIS_RETURN_IF_ERROR(ReadWindowSpec(ctx, x.size() - 2, *kernel, spec));
  if (kind == PoolKind::kLp && ctx.attr("p") && ctx.attr("p")->kind != ir::Attribute::Kind::kInt)
    return ctx.Unsupported("LpPool-1 float attribute p");
  std::vector<ir::Dim> out = {x[0], x[1]};
  for (size_t i = 0; i + 2 < x.size(); ++i) {
    PRECIS_ASSIGN_OR_RETURN(auto d, WindowOutput(ctx, spec, i, x[i + 2]));
    out.push_back(d);
  }
  ctx.SetOutput(0, t, out);
  if (kind == PoolKind::kMax && ctx.has_output(1)) {
    if (ctx.Int("storage_order", 0) != 0 && x.size() > 4)
      return ctx.Unsupported("MaxPool Indices with storage_order=1 (column major) for 3 spatial dims");
    ctx.SetOutput(1, ir::DType::kI64, out);
  }
  return Status::Ok();
}

Status InferMaxPool(InferContext& ctx) { return InferPool(ctx, PoolKind::kMax); }
Status InferAveragePool(InferContext& ctx) { return InferPool(ctx, PoolKind::kAverage); }
Status InferLpPool(InferContext& ctx) { return InferPool(ctx, PoolKind::kLp); }

// Global pools: [N, C, 1, ...] (float types only).
Status InferGlobalPool(InferContext& ctx) {
  PRECIS_ASSIGN_OR_RETURN(auto x, ctx.InputDims(0));
  if (x.size() < 2) return ctx.Error("input X has rank " + std::to_string(x.size()) + ", expected N x C x spatial dims");
  PRECIS_RETURN_IF_ERROR(RequireFloat(ctx, 0));
  if (ctx.attr("p") && ctx.attr("p")->kind != ir::Attribute::Kind::kInt) return ctx.Unsupported("GlobalLpPool-1 float attribute p");
  std::vector<ir::Dim> out = {x[0], x[1]};
  out.resize(x.size(), ir::Dim::Static(1));
  ctx.SetOutput(0, ctx.input_dtype(0), out);
  return Status::Ok();
}

}  // namespace

void RegisterNnOps(OpRegistry& r) {
  r.Register({"", "Conv", 1, INT_MAX, InferConv, true, -1, "", PrecisionClass::kCompute});
  r.Register({"", "ConvTranspose", 1, INT_MAX, InferConvTranspose, true, -1, "", PrecisionClass::kCompute});
  r.Register({"", "ConvInteger", 10, INT_MAX, InferQuantConv, true, -1, "", PrecisionClass::kUntouched});
  r.Register({"", "QLinearConv", 10, INT_MAX, InferQuantConv, true, -1, "", PrecisionClass::kUntouched});
  r.Register({"", "MaxPool", 1, INT_MAX, InferMaxPool, true, -1, "", PrecisionClass::kFollow});
  r.Register({"", "MaxUnpool", 9, INT_MAX, InferMaxUnpool, true, -1, "", PrecisionClass::kPassthrough, 1});
  r.Register({"", "AveragePool", 1, INT_MAX, InferAveragePool, true, -1, "", PrecisionClass::kFollow});
  r.Register({"", "LpPool", 2, INT_MAX, InferLpPool, true, -1, "", PrecisionClass::kKeepFp32});
  r.Register({"", "GlobalAveragePool", 1, INT_MAX, InferGlobalPool, true, -1, "", PrecisionClass::kFollow});
  r.Register({"", "GlobalMaxPool", 1, INT_MAX, InferGlobalPool, true, -1, "", PrecisionClass::kFollow});
  r.Register({"", "GlobalLpPool", 2, INT_MAX, InferGlobalPool, true, -1, "", PrecisionClass::kKeepFp32});
  RegisterNnNormOps(r);
}

}  // namespace precis::ops
