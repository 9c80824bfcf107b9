// Semantics of MatMul (numpy matmul: 1-D operands promoted and the added axis removed, batch
// dims broadcast) and Gemm (2-D, optional transposes, C unidirectionally broadcast to MxN).
#include "compiler/ops/infer_helpers.h"
#include "compiler/ops/op_registry.h"

namespace precis::ops {
namespace {

// numpy matmul's output dims for operands a and b.
StatusOr<std::vector<ir::Dim>> MatMulDims(InferContext& ctx, std::vector<ir::Dim> a, std::vector<ir::Dim> b) {
  if (a.empty() || b.empty()) return ctx.Error("operands must have rank >= 1");
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
  return out;
}

Status InferMatMul(InferContext& ctx) {
  PRECIS_ASSIGN_OR_RETURN(auto a, ctx.InputDims(0));
  PRECIS_ASSIGN_OR_RETURN(auto b, ctx.InputDims(1));
  if (ctx.input_dtype(0) != ctx.input_dtype(1)) return ctx.Error("operand dtypes differ");
  PRECIS_ASSIGN_OR_RETURN(auto out, MatMulDims(ctx, a, b));
  ctx.SetOutput(0, ctx.input_dtype(0), out);
  return Status::Ok();
}

// MatMulInteger (A, B, zero points; int32 out) and QLinearMatMul (a, a_scale, a_zero_point, b,
// b_scale, b_zero_point, y_scale, y_zero_point; out typed as y_zero_point): 8-bit operands.
Status InferQuantMatMul(InferContext& ctx) {
  bool qlinear = ctx.node().op_type() == "QLinearMatMul";
  size_t bi = qlinear ? 3 : 1;
  PRECIS_ASSIGN_OR_RETURN(auto a, ctx.InputDims(0));
  PRECIS_ASSIGN_OR_RETURN(auto b, ctx.InputDims(bi));
  PRECIS_ASSIGN_OR_RETURN(ir::DType dtype, QuantProductDType(ctx, bi, qlinear));
  PRECIS_ASSIGN_OR_RETURN(auto out, MatMulDims(ctx, a, b));
  ctx.SetOutput(0, dtype, out);
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

// Det: the determinants of [..., M, M] float matrices.
Status InferDet(InferContext& ctx) {
  PRECIS_ASSIGN_OR_RETURN(auto x, ctx.InputDims(0));
  if (!ir::IsFloat(ctx.input_dtype(0))) return ctx.Error("input must be a float tensor");
  if (x.size() < 2) return ctx.Error("input must have rank >= 2");
  const ir::Dim &m = x[x.size() - 2], &n = x.back();
  if (m.is_static() && n.is_static() && m.value() != n.value()) return ctx.Error("matrices must be square");
  ctx.SetOutput(0, ctx.input_dtype(0), std::vector<ir::Dim>(x.begin(), x.end() - 2));
  return Status::Ok();
}

}  // namespace

void RegisterMatMulOps(OpRegistry& r) {
  r.Register({"", "Det", 11, INT_MAX, InferDet, true, -1, "", PrecisionClass::kKeepFp32});
  r.Register({"", "MatMul", 1, INT_MAX, InferMatMul, true, -1, "", PrecisionClass::kCompute});
  r.Register({"", "Gemm", 6, INT_MAX, InferGemm, true, -1, "", PrecisionClass::kCompute});
  r.Register({"", "MatMulInteger", 10, INT_MAX, InferQuantMatMul, true, -1, "", PrecisionClass::kUntouched});
  r.Register({"", "QLinearMatMul", 10, INT_MAX, InferQuantMatMul, true, -1, "", PrecisionClass::kUntouched});
}

}  // namespace precis::ops
