// Operator semantics: internal operators of training plans, made by the training assembler
// (compiler/driver/train.cc) and the gradient rules, never read from ONNX models. They live in the
// default domain because the IR builders and the autodiff rule table address that domain; their
// names are not ONNX operators.
//
//   BatchNormalizationTraining(X [N, C, ...], scale [C], B [C]) {epsilon}
//       -> Y (X's type), batch mean [C], batch variance [C] (biased: the mean of squared deviations
//          over every axis but 1), f32 for 16-bit and f32 X, f64 for f64 X: normalization with the statistics
//          of the batch. The running statistics are updated by IR ops around it.
//   BatchNormalizationTrainingGrad(dY, X, scale, mean, var) {epsilon}
//       -> dX (X's type), dscale [C], dB [C] (scale's type).
//   DropoutTraining(X, seed i64[], counter i64[]) {ratio, stream}
//       -> Y (X's type), mask (bool, X's shape): Y = X * mask / (1 - ratio), the mask drawn from a
//          counter-based generator (runtime/kernels/philox.h) keyed by (seed, counter, stream,
//          element index), so every backend and a resumed run draw the same mask.
//   ConvFilterGrad(X [N, C, in...], dY [N, M, out...]) {kernel_shape, strides, pads, dilations, group}
//       -> dW [M, C/group, kernel...] (X's type): the gradient of Conv's weights, with the forward
//          node's geometry (explicit pads). Compute-heavy: 16-bit operands, FP32 accumulation.
//   MaxPoolGrad(dY, X) {kernel_shape, strides, pads, dilations, ceil_mode}
//       -> dX (X's type and shape): each window's gradient added at the position of its maximum
//          (the first in scan order, NaN losing to numbers, as the MaxPool kernels choose).
//   ReluGrad(dY, X) -> dX (dY's type, X's shape): dY where X > 0, else 0.
//   UnscaleGradients(inv_scale f32[], g1, ..., gn) -> g1', ..., gn', found_inf (bool[]):
//       gi' = gi * inv_scale (in f32, as PyTorch's _amp_foreach_non_finite_check_and_unscale_),
//       found_inf = some value of some gi is Inf or NaN. One pass over all gradients of a step
//       of dynamic loss scaling.
//
// In mixed-precision training plans BatchNormalizationTraining and its gradient follow the 16-bit
// activations (X, Y, dY, dX) while scale, B and the batch statistics stay FP32 (low_inputs and
// low_outputs below): statistics are summed in double or FP32 inside the kernels either way.
#include <optional>

#include "compiler/ops/infer_helpers.h"
#include "compiler/ops/op_registry.h"

namespace precis::ops {
namespace {

Status RequireFloat(const InferContext& ctx, size_t i, const char* what) {
  if (!ctx.has_input(i)) return ctx.Error(std::string(what) + " is missing");
  ir::DType t = ctx.input_dtype(i);
  if (!ir::IsFloat(t)) return ctx.Error(std::string(what) + " has dtype " + std::string(ir::DTypeName(t)) + ", expected a float type");
  return Status::Ok();
}

// Input i must be a float vector of `channels` values.
Status RequireChannelVector(const InferContext& ctx, size_t i, const ir::Dim& channels, const char* what) {
  PRECIS_RETURN_IF_ERROR(RequireFloat(ctx, i, what));
  PRECIS_ASSIGN_OR_RETURN(auto d, ctx.InputDims(i));
  if (d.size() != 1) return ctx.Error(std::string(what) + " must have rank 1, has rank " + std::to_string(d.size()));
  if (d[0].is_static() && channels.is_static() && d[0].value() != channels.value())
    return ctx.Error(std::string(what) + " has " + std::to_string(d[0].value()) + " values, expected " + std::to_string(channels.value()));
  return Status::Ok();
}

StatusOr<std::vector<ir::Dim>> ChannelsFirst(const InferContext& ctx, size_t i, const char* what) {
  PRECIS_RETURN_IF_ERROR(RequireFloat(ctx, i, what));
  PRECIS_ASSIGN_OR_RETURN(auto x, ctx.InputDims(i));
  if (x.size() < 2) return ctx.Error(std::string(what) + " has rank " + std::to_string(x.size()) + ", expected N x C x ...");
  return x;
}

Status InferBatchNormTraining(InferContext& ctx) {
  PRECIS_ASSIGN_OR_RETURN(auto x, ChannelsFirst(ctx, 0, "X"));
  PRECIS_RETURN_IF_ERROR(RequireChannelVector(ctx, 1, x[1], "scale"));
  PRECIS_RETURN_IF_ERROR(RequireChannelVector(ctx, 2, x[1], "B"));
  ir::DType stats = ctx.input_dtype(0) == ir::DType::kF64 ? ir::DType::kF64 : ir::DType::kF32;
  ctx.SetOutput(0, ctx.input_type(0));
  if (ctx.has_output(1)) ctx.SetOutput(1, stats, {x[1]});
  if (ctx.has_output(2)) ctx.SetOutput(2, stats, {x[1]});
  return Status::Ok();
}

Status InferBatchNormTrainingGrad(InferContext& ctx) {
  PRECIS_ASSIGN_OR_RETURN(auto dy, ChannelsFirst(ctx, 0, "dY"));
  PRECIS_ASSIGN_OR_RETURN(auto x, ChannelsFirst(ctx, 1, "X"));
  if (dy.size() != x.size()) return ctx.Error("dY and X differ in rank");
  for (size_t i = 0; i < x.size(); ++i)
    if (x[i].is_static() && dy[i].is_static() && x[i].value() != dy[i].value()) return ctx.Error("dY and X differ in shape");
  const char* names[] = {"", "", "scale", "mean", "var"};
  for (size_t i = 2; i < 5; ++i) PRECIS_RETURN_IF_ERROR(RequireChannelVector(ctx, i, x[1], names[i]));
  ctx.SetOutput(0, ctx.input_type(1));
  if (ctx.has_output(1)) ctx.SetOutput(1, ctx.input_type(2));
  if (ctx.has_output(2)) ctx.SetOutput(2, ctx.input_type(2));
  return Status::Ok();
}

Status InferDropoutTraining(InferContext& ctx) {
  PRECIS_RETURN_IF_ERROR(RequireFloat(ctx, 0, "X"));
  PRECIS_ASSIGN_OR_RETURN(auto x, ctx.InputDims(0));
  for (size_t i : {size_t(1), size_t(2)}) {
    const char* what = i == 1 ? "seed" : "counter";
    if (!ctx.has_input(i) || ctx.input_dtype(i) != ir::DType::kI64) return ctx.Error(std::string(what) + " must be an i64 scalar");
    PRECIS_ASSIGN_OR_RETURN(auto d, ctx.InputDims(i));
    if (!d.empty()) return ctx.Error(std::string(what) + " must be an i64 scalar");
  }
  float ratio = ctx.Float("ratio", -1.0f);
  if (!(ratio >= 0.0f && ratio < 1.0f)) return ctx.Error("ratio " + std::to_string(ratio) + " is outside [0, 1)");
  ctx.SetOutput(0, ctx.input_type(0));
  if (ctx.has_output(1)) ctx.SetOutput(1, ir::DType::kBool, x);
  return Status::Ok();
}

// dY and X have one shape (the gradient ops of pointwise and pooling operators).
Status RequireSameShape(const InferContext& ctx, size_t a, size_t b, const char* a_name, const char* b_name) {
  PRECIS_RETURN_IF_ERROR(RequireFloat(ctx, a, a_name));
  PRECIS_RETURN_IF_ERROR(RequireFloat(ctx, b, b_name));
  PRECIS_ASSIGN_OR_RETURN(auto da, ctx.InputDims(a));
  PRECIS_ASSIGN_OR_RETURN(auto db, ctx.InputDims(b));
  bool same = da.size() == db.size();
  for (size_t i = 0; same && i < da.size(); ++i) same = !(da[i].is_static() && db[i].is_static() && da[i].value() != db[i].value());
  if (!same) return ctx.Error(std::string(a_name) + " and " + b_name + " differ in shape");
  return Status::Ok();
}

Status InferConvFilterGrad(InferContext& ctx) {
  PRECIS_ASSIGN_OR_RETURN(auto x, ChannelsFirst(ctx, 0, "X"));
  PRECIS_ASSIGN_OR_RETURN(auto dy, ChannelsFirst(ctx, 1, "dY"));
  std::optional<std::vector<int64_t>> kernel = ctx.Ints("kernel_shape");
  if (!kernel || kernel->size() + 2 != x.size() || dy.size() != x.size())
    return ctx.Error("kernel_shape must give the " + std::to_string(x.size() - 2) + " spatial dims of X and dY");
  int64_t group = ctx.Int("group", 1);
  if (group < 1 || (x[1].is_static() && x[1].value() % group != 0)) return ctx.Error("group does not divide X's channels");
  std::vector<ir::Dim> out = {dy[1], x[1].is_static() ? ir::Dim::Static(x[1].value() / group) : ir::Dim()};
  for (int64_t k : *kernel) out.push_back(ir::Dim::Static(k));
  ctx.SetOutput(0, ctx.input_dtype(0), out);
  return Status::Ok();
}

Status InferMaxPoolGrad(InferContext& ctx) {
  PRECIS_RETURN_IF_ERROR(RequireFloat(ctx, 0, "dY"));
  PRECIS_ASSIGN_OR_RETURN(auto x, ChannelsFirst(ctx, 1, "X"));
  std::optional<std::vector<int64_t>> kernel = ctx.Ints("kernel_shape");
  if (!kernel || kernel->size() + 2 != x.size()) return ctx.Error("kernel_shape must give the spatial dims of X");
  ctx.SetOutput(0, ctx.input_type(1));
  return Status::Ok();
}

Status InferReluGrad(InferContext& ctx) {
  PRECIS_RETURN_IF_ERROR(RequireSameShape(ctx, 0, 1, "dY", "X"));
  PRECIS_ASSIGN_OR_RETURN(auto x, ctx.InputDims(1));
  ctx.SetOutput(0, ctx.input_dtype(0), x);
  return Status::Ok();
}

Status InferUnscaleGradients(InferContext& ctx) {
  size_t n = ctx.num_inputs();
  if (n < 2) return ctx.Error("needs inv_scale and at least one gradient");
  if (ctx.num_outputs() != n) return ctx.Error("needs one output per gradient and found_inf");
  if (!ctx.has_input(0) || ctx.input_dtype(0) != ir::DType::kF32) return ctx.Error("inv_scale must be an f32 scalar");
  PRECIS_ASSIGN_OR_RETURN(auto s, ctx.InputDims(0));
  if (!s.empty()) return ctx.Error("inv_scale must be an f32 scalar");
  for (size_t i = 1; i < n; ++i) {
    PRECIS_RETURN_IF_ERROR(RequireFloat(ctx, i, "a gradient"));
    ctx.SetOutput(i - 1, ctx.input_type(i));
  }
  ctx.SetOutput(n - 1, ir::DType::kBool, {});
  return Status::Ok();
}

}  // namespace

void RegisterTrainingOps(OpRegistry& r) {
  using P = PrecisionClass;
  r.Register({"", "BatchNormalizationTraining", 1, INT_MAX, InferBatchNormTraining, false, -1, "", P::kFollow, 1, 1});
  r.Register({"", "BatchNormalizationTrainingGrad", 1, INT_MAX, InferBatchNormTrainingGrad, false, -1, "", P::kFollow, 2, 1});
  r.Register({"", "DropoutTraining", 1, INT_MAX, InferDropoutTraining, false, -1, "", P::kFollow, 1});
  r.Register({"", "ConvFilterGrad", 1, INT_MAX, InferConvFilterGrad, false, -1, "", P::kCompute});
  r.Register({"", "MaxPoolGrad", 1, INT_MAX, InferMaxPoolGrad, false, -1, "", P::kFollow});
  r.Register({"", "ReluGrad", 1, INT_MAX, InferReluGrad, false, -1, "", P::kFollow});
  r.Register({"", "UnscaleGradients", 1, INT_MAX, InferUnscaleGradients, false, -1, "", P::kKeepFp32});
}

}  // namespace precis::ops
