// Operator semantics: signal processing. HannWindow, HammingWindow and BlackmanWindow (length given
// as a scalar input), MelWeightMatrix ([dft_length / 2 + 1, num_mel_bins]), DFT and STFT. Lengths
// given as inputs are constants or value symbols bound at run time (docs/dynamic-shapes.md).
#include "compiler/ops/op_registry.h"
#include "compiler/ops/shape_values.h"

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

// The transformed length along an axis of length `len`: dft_length (input 1) when given, else
// the axis length (2 * (len - 1) for a one-sided inverse); m, the output length, is n / 2 + 1 for
// a one-sided forward transform.
std::optional<ir::DimExpr> DftOutputLength(InferContext& ctx, const std::optional<ir::DimExpr>& len, bool inverse, bool onesided) {
  std::optional<ir::DimExpr> n;
  if (ctx.has_input(1)) {
    auto v = ctx.ShapeValues(1);
    if (!v.ok() || v->size() != 1) return std::nullopt;
    n = (*v)[0];
  } else if (len) {
    auto less = len->Sub(ir::DimExpr::Constant(1));
    n = inverse && onesided ? (less ? less->Mul(ir::DimExpr::Constant(2)) : std::nullopt) : len;
  }
  if (n && onesided && !inverse) {
    auto half = n->FloorDiv(2);
    return half ? half->Add(ir::DimExpr::Constant(1)) : std::nullopt;
  }
  return n;
}

// DFT at opset 20 with its axis given as a run-time value (a value symbol): each dim but the
// last is the transformed length where the axis falls on it, else the input's.
Status InferDftRunTimeAxis(InferContext& ctx, const std::vector<ir::Dim>& x) {
  auto a = ctx.ShapeValues(2);
  if (!a.ok() || a->size() != 1 || !ir::IsInteger(ctx.input_dtype(2))) return ctx.Error("axis must be one integer");
  int64_t rank = int64_t(x.size());
  auto axis = AxisValue((*a)[0], rank);
  bool inverse = ctx.Int("inverse", 0) != 0, onesided = ctx.Int("onesided", 0) != 0;
  std::vector<ir::Dim> out = x;
  for (int64_t j = 0; j + 1 < rank; ++j) {
    auto len = ir::DimExpr::FromDim(x[size_t(j)]);
    auto m = DftOutputLength(ctx, len, inverse, onesided);
    auto here = axis ? ir::DimExpr::Eq(*axis, ir::DimExpr::Constant(j)) : std::nullopt;
    auto dim = here && m && len ? ir::DimExpr::Select(*here, *m, *len) : std::nullopt;
    out[size_t(j)] = dim ? dim->ToDim() : ir::Dim();
  }
  out.back() = ir::Dim::Static(inverse && onesided ? 1 : 2);
  ctx.SetOutput(0, ctx.input_dtype(0), out);
  return Status::Ok();
}

// DFT: x [..., n, 1 or 2] (real, or complex as pairs) transformed along `axis` (an attribute
// before opset 20, input 2 from 20, a constant or a value symbol; it counts the trailing pair dim) over dft_length (input 1, else
// the axis length; 2 * (length - 1) for a one-sided inverse). Output [..., m, 2] with m = n, or
// n / 2 + 1 when onesided; a one-sided inverse gives the real signal [..., n, 1].
Status InferDft(InferContext& ctx) {
  PRECIS_ASSIGN_OR_RETURN(auto x, ctx.InputDims(0));
  if (!ir::IsFloat(ctx.input_dtype(0))) return ctx.Error("input must be a float tensor");
  int64_t rank = int64_t(x.size());
  if (rank < 2 || !x.back().is_static() || (x.back().value() != 1 && x.back().value() != 2))
    return ctx.Error("input must end in a dim of 1 (real) or 2 (complex)");
  int64_t axis = ctx.Int("axis", 1);
  if (ctx.opset() >= 20) {
    if (!ctx.has_input(2)) return ctx.Unsupported("DFT at opset 20 without an axis input (its default -2)");
    if (!ctx.input_constant(2)) return InferDftRunTimeAxis(ctx, x);
    PRECIS_ASSIGN_OR_RETURN(auto a, ctx.ConstantInts(2));
    if (a.size() != 1) return ctx.Error("axis must hold one value");
    axis = a[0];
  }
  if (axis < -rank || axis >= rank) return ctx.Error("axis " + std::to_string(axis) + " is out of range");
  if (axis < 0) axis += rank;
  if (axis == rank - 1) return ctx.Error("axis must not be the last (real/imaginary) dim");
  bool inverse = ctx.Int("inverse", 0) != 0, onesided = ctx.Int("onesided", 0) != 0;
  if (ctx.has_input(1)) {
    PRECIS_ASSIGN_OR_RETURN(auto v, ctx.ShapeValues(1));
    if (v.size() != 1) return ctx.Error("dft_length must hold one value");
  }
  std::vector<ir::Dim> out = x;
  auto m = DftOutputLength(ctx, ir::DimExpr::FromDim(x[size_t(axis)]), inverse, onesided);
  out[size_t(axis)] = m ? m->ToDim() : ir::Dim();
  out.back() = ir::Dim::Static(inverse && onesided ? 1 : 2);
  ctx.SetOutput(0, ctx.input_dtype(0), out);
  return Status::Ok();
}

// STFT: signal [batch, length, 1 or 2], frame_step, window [frame_length] (optional), frame_length
// (optional): [batch, frames, bins, 2] with frames = (length - frame_length) / frame_step + 1 and
// bins = frame_length / 2 + 1 when onesided (the default), else frame_length.
Status InferStft(InferContext& ctx) {
  PRECIS_ASSIGN_OR_RETURN(auto x, ctx.InputDims(0));
  if (!ir::IsFloat(ctx.input_dtype(0))) return ctx.Error("signal must be a float tensor");
  if (x.size() != 3 || !x[2].is_static() || (x[2].value() != 1 && x[2].value() != 2))
    return ctx.Error("signal must be [batch, length, 1 or 2]");
  PRECIS_ASSIGN_OR_RETURN(auto step, ScalarValue(ctx, 1, "frame_step"));
  auto len = ir::DimExpr::FromDim(x[1]);
  std::optional<ir::DimExpr> frame = len;
  if (ctx.has_input(2)) {
    PRECIS_ASSIGN_OR_RETURN(auto w, ctx.InputDims(2));
    if (w.size() != 1) return ctx.Error("window must be 1-D");
    frame = ir::DimExpr::FromDim(w[0]);
  } else if (ctx.has_input(3)) {
    PRECIS_ASSIGN_OR_RETURN(auto fl, ScalarValue(ctx, 3, "frame_length"));
    frame = fl;
  }
  std::optional<ir::DimExpr> frames, bins;
  if (len && frame) {
    auto span = len->Sub(*frame);
    auto q = span ? span->FloorDivBy(step) : std::nullopt;
    frames = q ? q->Add(ir::DimExpr::Constant(1)) : std::nullopt;
    auto half = frame->FloorDiv(2);
    bins = ctx.Int("onesided", 1) != 0 ? (half ? half->Add(ir::DimExpr::Constant(1)) : std::nullopt) : frame;
  }
  ctx.SetOutput(0, ctx.input_dtype(0), {x[0], frames ? frames->ToDim() : ir::Dim(), bins ? bins->ToDim() : ir::Dim(), ir::Dim::Static(2)});
  return Status::Ok();
}

}  // namespace

void RegisterSignalOps(OpRegistry& r) {
  r.Register({"", "DFT", 17, INT_MAX, InferDft, true, -1, "", PrecisionClass::kKeepFp32});
  r.Register({"", "STFT", 17, INT_MAX, InferStft, true, -1, "", PrecisionClass::kKeepFp32});
  for (const char* op : {"HannWindow", "HammingWindow", "BlackmanWindow"})
    r.Register({"", op, 17, INT_MAX, InferWindow, true, -1, "", PrecisionClass::kUntouched});
  r.Register({"", "MelWeightMatrix", 17, INT_MAX, InferMelWeightMatrix, true, -1, "", PrecisionClass::kUntouched});
}

}  // namespace precis::ops
