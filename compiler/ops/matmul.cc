// Semantics of MatMul (numpy matmul: 1-D operands promoted and the added axis removed, batch
// dims broadcast) and Gemm (2-D, optional transposes, C unidirectionally broadcast to MxN).
#include "compiler/ops/op_registry.h"

namespace precis::ops {
namespace {

Status InferMatMul(InferContext& ctx) {
  PRECIS_ASSIGN_OR_RETURN(auto a, ctx.InputDims(0));
  PRECIS_ASSIGN_OR_RETURN(auto b, ctx.InputDims(1));
  if (a.empty() || b.empty()) return ctx.Error("operands must have rank >= 1");
  if (ctx.input_dtype(0) != ctx.input_dtype(1)) return ctx.Error("operand dtypes differ");
  bool a_vec = a.size() == 1, b_vec = b.size() == 1;
  if (a_vec) a.insert(a.begin(), ir::Dim::Static(1));
  if (b_vec) b.push_back(ir::Dim::Static(1));
  const ir::Dim &k1 = a.back(), &k2 = b[b.size() - 2];
  if (k1.is_static() && k2.is_static() && k1.value() != k2.value())
    return ctx.Error("inner dimensions differ: " + std::to_string(k1.value()) + " vs " + std::to_string(k2.value()));
  std::vector<ir::Dim> abatch(a.begin(), a.end() - 2), bbatch(b.begin(), b.end() - 2);
  auto batch = BroadcastDims(abatch, bbatch);
  if (!batch.ok()) return ctx.Error("batch " + batch.status().message());
  std::vector<ir::Dim> out = *batch;
  if (!a_vec) out.push_back(a[a.size() - 2]);
  if (!b_vec) out.push_back(b.back());
  ctx.SetOutput(0, ctx.input_dtype(0), out);
  return Status::Ok();
}

Status InferGemm(InferContext& ctx) {
  PRECIS_ASSIGN_OR_RETURN(auto a, ctx.InputDims(0));
  PRECIS_ASSIGN_OR_RETURN(auto b, ctx.InputDims(1));
  if (a.size() != 2 || b.size() != 2) return ctx.Error("A and B must be matrices");
  bool ta = ctx.Int("transA", 0) != 0, tb = ctx.Int("transB", 0) != 0;
  ir::Dim m = ta ? a[1] : a[0], k1 = ta ? a[0] : a[1];
  ir::Dim k2 = tb ? b[1] : b[0], n = tb ? b[0] : b[1];
  if (k1.is_static() && k2.is_static() && k1.value() != k2.value())
    return ctx.Error("inner dimensions differ: " + std::to_string(k1.value()) + " vs " + std::to_string(k2.value()));
  if (ctx.has_input(2)) {
    PRECIS_ASSIGN_OR_RETURN(auto c, ctx.InputDims(2));
    if (c.size() > 2) return ctx.Error("C must have rank <= 2");
    auto bc = BroadcastDims({m, n}, c);
    if (!bc.ok() || bc->size() != 2) return ctx.Error("C cannot broadcast to MxN");
  }
  ctx.SetOutput(0, ctx.input_dtype(0), {m, n});
  return Status::Ok();
}

}  // namespace

void RegisterMatMulOps(OpRegistry& r) {
  r.Register({"", "MatMul", 1, INT_MAX, InferMatMul, true, -1, "", PrecisionClass::kCompute});
  r.Register({"", "Gemm", 6, INT_MAX, InferGemm, true, -1, "", PrecisionClass::kCompute});
}

}  // namespace precis::ops
