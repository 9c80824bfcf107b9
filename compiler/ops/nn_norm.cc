// Operator semantics: normalizations (BatchNormalization in inference form, InstanceNormalization,
// LayerNormalization, GroupNormalization, LRN, LpNormalization, MeanVarianceNormalization).
// Registered by RegisterNnOps (nn.cc). Every output 0 has X's type; these kernels finish a slice's
// statistics before writing it and write each element from the same element, so Y may reuse X.
#include <algorithm>

#include "compiler/ops/infer_helpers.h"
#include "compiler/ops/op_registry.h"

namespace precis::ops {
namespace {

Status RequireFloatInput(const InferContext& ctx, size_t i) {
  ir::DType t = ctx.input_dtype(i);
  if (t != ir::DType::kUndefined && !ir::IsFloat(t))
    return ctx.Error("input " + std::to_string(i) + " has dtype " + std::string(ir::DTypeName(t)) + ", expected a float type");
  return Status::Ok();
}

// Input i must be a vector of `count` values (when both are known).
Status RequireVector(const InferContext& ctx, size_t i, const ir::Dim& count, const char* what) {
  PRECIS_ASSIGN_OR_RETURN(auto d, ctx.InputDims(i));
  if (d.size() != 1) return ctx.Error(std::string(what) + " must have rank 1, has rank " + std::to_string(d.size()));
  if (d[0].is_static() && count.is_static() && d[0].value() != count.value())
    return ctx.Error(std::string(what) + " has " + std::to_string(d[0].value()) + " values, expected " + std::to_string(count.value()));
  return RequireFloatInput(ctx, i);
}

StatusOr<std::vector<ir::Dim>> ChannelInput(const InferContext& ctx) {
  PRECIS_ASSIGN_OR_RETURN(auto x, ctx.InputDims(0));
  if (x.size() < 2) return ctx.Error("input X has rank " + std::to_string(x.size()) + ", expected N x C x ...");
  PRECIS_RETURN_IF_ERROR(RequireFloatInput(ctx, 0));
  return x;
}

Status InferBatchNormalization(InferContext& ctx) {
  if (ctx.Int("training_mode", 0) != 0) return ctx.Unsupported("training_mode=1 (only the inference form is supported)");
  for (size_t i = 1; i < ctx.num_outputs(); ++i)
    if (ctx.has_output(i)) return ctx.Unsupported("training outputs (running or saved mean/variance) are not supported");
  if (ctx.Int("spatial", 1) != 1) return ctx.Unsupported("spatial=0 (per-activation statistics)");
  PRECIS_ASSIGN_OR_RETURN(auto x, ChannelInput(ctx));
  if (ctx.num_inputs() < 5) return ctx.Error("needs inputs X, scale, B, mean and var");
  const char* names[] = {"", "scale", "B", "mean", "var"};
  for (size_t i = 1; i < 5; ++i) PRECIS_RETURN_IF_ERROR(RequireVector(ctx, i, x[1], names[i]));
  ctx.SetOutput(0, ctx.input_type(0));
  return Status::Ok();
}

Status InferInstanceNormalization(InferContext& ctx) {
  PRECIS_ASSIGN_OR_RETURN(auto x, ChannelInput(ctx));
  PRECIS_RETURN_IF_ERROR(RequireVector(ctx, 1, x[1], "scale"));
  PRECIS_RETURN_IF_ERROR(RequireVector(ctx, 2, x[1], "B"));
  ctx.SetOutput(0, ctx.input_type(0));
  return Status::Ok();
}

// Scale and B broadcast unidirectionally to X[axis:].
Status CheckNormalizedOperand(const InferContext& ctx, size_t i, const std::vector<ir::Dim>& norm, const char* what) {
  PRECIS_ASSIGN_OR_RETURN(auto d, ctx.InputDims(i));
  PRECIS_RETURN_IF_ERROR(RequireFloatInput(ctx, i));
  if (d.size() > norm.size()) return ctx.Error(std::string(what) + " has rank " + std::to_string(d.size()) + ", above the normalized rank");
  for (size_t k = 0; k < d.size(); ++k) {
    const ir::Dim& a = d[k];
    const ir::Dim& b = norm[norm.size() - d.size() + k];
    if (a.is_static() && b.is_static() && a.value() != 1 && a.value() != b.value())
      return ctx.Error(std::string(what) + " does not broadcast to the normalized dims");
  }
  return Status::Ok();
}

Status InferLayerNormalization(InferContext& ctx) {
  PRECIS_ASSIGN_OR_RETURN(auto x, ctx.InputDims(0));
  PRECIS_RETURN_IF_ERROR(RequireFloatInput(ctx, 0));
  if (!ctx.has_input(1)) return ctx.Error("input Scale is missing");
  int64_t rank = int64_t(x.size());
  if (rank == 0) return ctx.Error("X must have rank >= 1");
  PRECIS_ASSIGN_OR_RETURN(int64_t axis, NormalizeAxis(ctx.Int("axis", -1), rank, ctx));
  int64_t stash = ctx.Int("stash_type", 1);
  if (stash != 1) return ctx.Unsupported("stash_type " + std::to_string(stash) + " (only 1, float statistics)");
  std::vector<ir::Dim> norm(x.begin() + axis, x.end());
  PRECIS_RETURN_IF_ERROR(CheckNormalizedOperand(ctx, 1, norm, "Scale"));
  if (ctx.has_input(2)) PRECIS_RETURN_IF_ERROR(CheckNormalizedOperand(ctx, 2, norm, "B"));
  ctx.SetOutput(0, ctx.input_type(0));
  std::vector<ir::Dim> stat(x.begin(), x.begin() + axis);
  stat.resize(x.size(), ir::Dim::Static(1));
  if (ctx.has_output(1)) ctx.SetOutput(1, ir::DType::kF32, stat);
  if (ctx.has_output(2)) ctx.SetOutput(2, ir::DType::kF32, stat);
  return Status::Ok();
}

// Opset 18: scale and bias hold one value per group; opset 21: one per channel.
Status InferGroupNormalization(InferContext& ctx) {
  PRECIS_ASSIGN_OR_RETURN(auto x, ChannelInput(ctx));
  const ir::Attribute* g = ctx.attr("num_groups");
  if (!g || g->kind != ir::Attribute::Kind::kInt) return ctx.Error("attribute num_groups is required");
  int64_t groups = g->i;
  if (groups <= 0) return ctx.Error("num_groups must be positive");
  if (x[1].is_static() && x[1].value() % groups != 0)
    return ctx.Error(std::to_string(x[1].value()) + " channels are not divisible by num_groups " + std::to_string(groups));
  int64_t stash = ctx.Int("stash_type", 1);
  if (stash != 1) return ctx.Unsupported("stash_type " + std::to_string(stash) + " (only 1, float statistics)");
  ir::Dim per = ctx.opset() >= 21 ? x[1] : ir::Dim::Static(groups);
  PRECIS_RETURN_IF_ERROR(RequireVector(ctx, 1, per, "scale"));
  PRECIS_RETURN_IF_ERROR(RequireVector(ctx, 2, per, "bias"));
  ctx.SetOutput(0, ctx.input_type(0));
  return Status::Ok();
}

Status InferLrn(InferContext& ctx) {
  PRECIS_RETURN_IF_ERROR(ChannelInput(ctx).status());
  const ir::Attribute* size = ctx.attr("size");
  if (!size || size->kind != ir::Attribute::Kind::kInt) return ctx.Error("attribute size is required");
  if (size->i <= 0) return ctx.Error("size must be positive");
  ctx.SetOutput(0, ctx.input_type(0));
  return Status::Ok();
}

Status InferLpNormalization(InferContext& ctx) {
  PRECIS_ASSIGN_OR_RETURN(auto x, ctx.InputDims(0));
  PRECIS_RETURN_IF_ERROR(RequireFloatInput(ctx, 0));
  int64_t p = ctx.Int("p", 2);
  if (p != 1 && p != 2) return ctx.Error("p must be 1 or 2, is " + std::to_string(p));
  if (!x.empty()) PRECIS_RETURN_IF_ERROR(NormalizeAxis(ctx.Int("axis", -1), int64_t(x.size()), ctx).status());
  ctx.SetOutput(0, ctx.input_type(0));
  return Status::Ok();
}

Status InferMeanVarianceNormalization(InferContext& ctx) {
  PRECIS_ASSIGN_OR_RETURN(auto x, ctx.InputDims(0));
  PRECIS_RETURN_IF_ERROR(RequireFloatInput(ctx, 0));
  auto axes = ctx.Ints("axes").value_or(std::vector<int64_t>{0, 2, 3});
  std::vector<int64_t> seen;
  for (int64_t a : axes) {
    PRECIS_ASSIGN_OR_RETURN(int64_t n, NormalizeAxis(a, int64_t(x.size()), ctx));
    if (std::find(seen.begin(), seen.end(), n) != seen.end()) return ctx.Error("axes repeat axis " + std::to_string(n));
    seen.push_back(n);
  }
  ctx.SetOutput(0, ctx.input_type(0));
  return Status::Ok();
}

}  // namespace

void RegisterNnNormOps(OpRegistry& r) {
  r.Register({"", "BatchNormalization", 1, INT_MAX, InferBatchNormalization, true, 0, "", PrecisionClass::kFollow});
  r.Register({"", "InstanceNormalization", 1, INT_MAX, InferInstanceNormalization, true, 0, "", PrecisionClass::kKeepFp32});
  r.Register({"", "LayerNormalization", 17, INT_MAX, InferLayerNormalization, true, 0, "", PrecisionClass::kKeepFp32});
  r.Register({"", "GroupNormalization", 18, INT_MAX, InferGroupNormalization, true, 0, "", PrecisionClass::kKeepFp32});
  r.Register({"", "LRN", 1, INT_MAX, InferLrn, true, -1, "", PrecisionClass::kKeepFp32});
  r.Register({"", "LpNormalization", 1, INT_MAX, InferLpNormalization, true, 0, "", PrecisionClass::kKeepFp32});
  r.Register({"", "MeanVarianceNormalization", 9, INT_MAX, InferMeanVarianceNormalization, true, 0, "", PrecisionClass::kKeepFp32});
}

}  // namespace precis::ops
