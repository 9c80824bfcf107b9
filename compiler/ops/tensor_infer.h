// Shape arithmetic shared by the data movement operators (tensor*.cc): products and sums of
// possibly symbolic dims, Slice's clamping rules, and shape text for messages.
#pragma once

#include <algorithm>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "compiler/ir/dim_expr.h"
#include "compiler/ops/op_registry.h"
#include "runtime/kernels/strided_views.h"

namespace precis::ops {

// Starts/ends at or beyond this magnitude mean "from the beginning" / "to the end".
inline constexpr int64_t kMaxSliceDim = ir::kMaxDim;

// A product of dims as a polynomial over the symbols (ir::DimExpr), so that Reshape/Flatten can
// cancel symbols ([batch, 3, 4] -> [batch, -1] gives [batch, 12]) and keep products
// ([batch, seq, 768] -> [-1, 768] gives ["batch*seq", 768]).
struct DimFactors {
  std::optional<ir::DimExpr> expr;  // nullopt: a factor is unknown
  int64_t product = 1;              // the value, when static

  bool is_static() const { return expr && expr->is_constant(); }
  // The product as one dim: static, symbolic, or unknown.
  ir::Dim AsDim() const { return expr ? expr->ToDim() : ir::Dim(); }
  // this / divisor as one dim, when it divides exactly.
  ir::Dim Divide(const DimFactors& divisor) const {
    if (!expr || !divisor.expr || (divisor.is_static() && divisor.product == 0)) return ir::Dim();
    auto q = expr->DivExact(*divisor.expr);
    return q ? q->ToDim() : ir::Dim();
  }
};

// The product of dims, leaving out index `skip`.
inline DimFactors Factor(const std::vector<ir::Dim>& dims, int skip = -1) {
  std::vector<ir::Dim> kept;
  for (size_t i = 0; i < dims.size(); ++i)
    if (int(i) != skip) kept.push_back(dims[i]);
  DimFactors f;
  f.expr = ir::DimProduct(kept);
  // A zero factor makes the product 0 whatever the others are.
  if (std::any_of(kept.begin(), kept.end(), [](const ir::Dim& d) { return d.is_static() && d.value() == 0; })) f.expr = ir::DimExpr::Constant(0);
  if (f.is_static()) f.product = f.expr->constant();
  return f;
}

// The sum of dims (static, symbolic, or unknown when one is unknown).
inline ir::Dim SumDims(const std::vector<ir::Dim>& dims) {
  ir::DimExpr sum;
  for (const ir::Dim& d : dims) {
    auto e = ir::DimExpr::FromDim(d);
    if (!e) return ir::Dim();
    auto s = sum.Add(*e);
    if (!s) return ir::Dim();
    sum = *s;
  }
  return sum.ToDim();
}

// Two dims that must be equal: the better known one, or nullopt when both are static and differ.
inline std::optional<ir::Dim> MergeDims(const ir::Dim& a, const ir::Dim& b) {
  if (a.is_static() && b.is_static()) return a.value() == b.value() ? std::optional<ir::Dim>(a) : std::nullopt;
  if (a.is_static()) return a;
  if (b.is_static()) return b;
  return a.is_symbolic() ? a : b;
}

// ONNX Slice clamping of one axis, as the kernels do it (runtime/kernels/strided_views.h).
using rt::SliceAxis;
using rt::SliceRange;

inline std::string ShapeText(const std::vector<int64_t>& v) {
  std::string s = "[";
  for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + std::to_string(v[i]);
  return s + "]";
}

}  // namespace precis::ops
