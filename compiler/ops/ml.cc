// Operators of the ai.onnx.ml domain that take numbers: Binarizer, ArrayFeatureExtractor and
// TreeEnsemble (opset 5; post_transform NONE, as ONNX's reference implements it). Their kernels
// (runtime/cpu/kernels/ml.cc) keep the input's dtype: precision class untouched.
#include <climits>

#include "compiler/ops/op_registry.h"

namespace precis::ops {
namespace {

// Binarizer: 1 where X > threshold, else 0, in X's dtype.
Status InferBinarizer(InferContext& ctx) {
  PRECIS_ASSIGN_OR_RETURN(auto x, ctx.InputDims(0));
  ir::DType dt = ctx.input_dtype(0);
  if (!ir::IsFloat(dt) && !ir::IsInteger(dt)) return ctx.Error("X must be a numeric tensor");
  ctx.SetOutput(0, dt, x);
  return Status::Ok();
}

// ArrayFeatureExtractor: X [..., N] and int64 indices Y (their count k) -> X[..., Y] of shape
// [..., k]; a 1-D X gives [1, k] (onnxruntime's and the reference's shape).
Status InferArrayFeatureExtractor(InferContext& ctx) {
  PRECIS_ASSIGN_OR_RETURN(auto x, ctx.InputDims(0));
  PRECIS_ASSIGN_OR_RETURN(auto y, ctx.InputDims(1));
  ir::DType dt = ctx.input_dtype(0);
  if ((!ir::IsFloat(dt) && dt != ir::DType::kI64 && dt != ir::DType::kI32) || ctx.input_dtype(1) != ir::DType::kI64)
    return ctx.Error("X must be a float, int32 or int64 tensor and Y int64 indices");
  if (x.empty()) return ctx.Error("X must have rank >= 1");
  int64_t k = 1;
  for (const ir::Dim& d : y) {
    if (!d.is_static()) return ctx.Unsupported("the number of indices must be static");
    k *= d.value();
  }
  std::vector<ir::Dim> out = x.size() == 1 ? std::vector<ir::Dim>{ir::Dim::Static(1)} : std::vector<ir::Dim>(x.begin(), x.end() - 1);
  out.push_back(ir::Dim::Static(k));
  ctx.SetOutput(0, dt, out);
  return Status::Ok();
}

// The element count of a tensor attribute (-1 when absent or not a tensor).
int64_t TensorAttrSize(const InferContext& ctx, const char* name) {
  const ir::Attribute* a = ctx.attr(name);
  return a && a->kind == ir::Attribute::Kind::kTensor ? a->t.NumElements() : -1;
}

// TreeEnsemble: X [N, F] -> [N, n_targets] in X's dtype. Node arrays (splits, featureids, modes,
// true/false ids and leaf flags) of one length, leaf arrays (target ids, weights) of another.
Status InferTreeEnsemble(InferContext& ctx) {
  PRECIS_ASSIGN_OR_RETURN(auto x, ctx.InputDims(0));
  ir::DType dt = ctx.input_dtype(0);
  if (!ir::IsFloat(dt) || x.size() != 2) return ctx.Error("X must be a 2-D float tensor");
  int64_t targets = ctx.Int("n_targets", 0);
  if (targets < 1) return ctx.Error("n_targets must be positive");
  if (ctx.Int("post_transform", 0) != 0) return ctx.Unsupported("post_transform other than NONE (0)");
  int64_t agg = ctx.Int("aggregate_function", 1);
  if (agg < 0 || agg > 3) return ctx.Error("aggregate_function must be 0 to 3");
  auto ints = [&](const char* name) { return ctx.Ints(name).value_or(std::vector<int64_t>{}); };
  size_t nodes = ints("nodes_featureids").size(), leaves = ints("leaf_targetids").size();
  for (const char* name : {"nodes_truenodeids", "nodes_falsenodeids", "nodes_trueleafs", "nodes_falseleafs"})
    if (ints(name).size() != nodes) return ctx.Error(std::string(name) + " must have one entry per node (" + std::to_string(nodes) + ")");
  if (TensorAttrSize(ctx, "nodes_splits") != int64_t(nodes) || TensorAttrSize(ctx, "nodes_modes") != int64_t(nodes))
    return ctx.Error("nodes_splits and nodes_modes must be tensors with one entry per node");
  if (TensorAttrSize(ctx, "leaf_weights") != int64_t(leaves)) return ctx.Error("leaf_weights must be a tensor with one entry per leaf");
  for (int64_t t : ints("leaf_targetids"))
    if (t < 0 || t >= targets) return ctx.Error("a leaf target id is outside n_targets");
  if (ints("tree_roots").empty()) return ctx.Error("tree_roots is empty");
  ctx.SetOutput(0, dt, {x[0], ir::Dim::Static(targets)});
  return Status::Ok();
}

}  // namespace

void RegisterMlOps(OpRegistry& r) {
  r.Register({"ai.onnx.ml", "Binarizer", 1, INT_MAX, InferBinarizer, true, -1, "", PrecisionClass::kUntouched});
  r.Register({"ai.onnx.ml", "ArrayFeatureExtractor", 1, INT_MAX, InferArrayFeatureExtractor, true, -1, "", PrecisionClass::kUntouched});
  r.Register({"ai.onnx.ml", "TreeEnsemble", 5, INT_MAX, InferTreeEnsemble, true, -1, "", PrecisionClass::kUntouched});
}

}  // namespace precis::ops
