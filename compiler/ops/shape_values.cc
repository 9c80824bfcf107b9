// KnownValues (see shape_values.h).
#include "compiler/ops/shape_values.h"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstring>

#include "compiler/ops/op_registry.h"
#include "runtime/base/value_expr.h"

namespace precis::ops {
namespace {

using Values = std::vector<ir::DimExpr>;

// A constant integer (or bool) tensor's values, or the known values of a computed one.
std::optional<Values> ValuesOf(const ir::Node& node, size_t i, int64_t opset) {
  if (i >= node.inputs().size() || !node.inputs()[i]) return std::nullopt;
  const ir::Value* v = node.inputs()[i];
  if (v->known_values()) return *v->known_values();
  if (!v->is_constant() || !v->data() || !v->data()->has_data()) return std::nullopt;
  ir::DType dt = v->data()->dtype();
  if (!ir::IsInteger(dt) && dt != ir::DType::kBool) return std::nullopt;
  if (size_t(v->data()->NumElements()) > kMaxKnownValues) return std::nullopt;
  InferContext ctx(node, opset);
  auto ints = ctx.ConstantInts(i);
  if (!ints.ok()) return std::nullopt;
  Values out;
  for (int64_t x : *ints) out.push_back(ir::DimExpr::Constant(x));
  return out;
}

std::optional<std::vector<int64_t>> Constants(const Values& v) {
  std::vector<int64_t> out;
  for (const auto& e : v) {
    if (!e.is_constant()) return std::nullopt;
    out.push_back(e.constant());
  }
  return out;
}

bool IsIntegerType(const ir::Value* v) {
  return v && v->type().is_tensor() && (ir::IsInteger(v->type().dtype()) || v->type().dtype() == ir::DType::kBool);
}

int64_t RankOf(const ir::Value* v) { return v && v->type().is_tensor() ? v->type().shape().rank() : -1; }

// Elementwise over two value lists of equal length or one of length 1 (NumPy broadcasting of
// the 1-D and scalar tensors shape arithmetic uses).
template <typename F>
std::optional<Values> Binary(const Values& a, const Values& b, F f) {
  if (a.size() != b.size() && a.size() != 1 && b.size() != 1) return std::nullopt;
  size_t n = std::max(a.size(), b.size());
  Values out;
  for (size_t k = 0; k < n; ++k) {
    auto r = f(a[a.size() == 1 ? 0 : k], b[b.size() == 1 ? 0 : k]);
    if (!r) return std::nullopt;
    out.push_back(*r);
  }
  return out;
}

// Integer division as the Div kernel does it (truncation toward zero); a symbolic value by a
// nonzero constant k: floor(|a| / |k|) with the sign of a / k, as atoms.
std::optional<ir::DimExpr> Divide(const ir::DimExpr& a, const ir::DimExpr& b) {
  if (a.is_constant() && b.is_constant()) {
    if (b.constant() == 0 || (b.constant() == -1 && a.constant() == INT64_MIN)) return std::nullopt;
    return ir::DimExpr::Constant(a.constant() / b.constant());
  }
  if (auto exact = a.DivExact(b)) return exact;
  if (!b.is_constant() || b.constant() == 0 || b.constant() == INT64_MIN) return std::nullopt;
  int64_t k = b.constant() < 0 ? -b.constant() : b.constant();
  auto up = a.FloorDiv(k);                             // a >= 0
  auto minus_a = ir::DimExpr().Sub(a);
  auto down = minus_a ? minus_a->FloorDiv(k) : std::nullopt;  // a < 0: -floor(-a / k)
  auto neg_down = down ? ir::DimExpr().Sub(*down) : std::nullopt;
  auto negative = ir::DimExpr::Lt(a, ir::DimExpr());
  auto q = up && neg_down && negative ? ir::DimExpr::Select(*negative, *neg_down, *up) : std::nullopt;
  if (q && b.constant() < 0) q = ir::DimExpr().Sub(*q);
  return q;
}

// A value that is 0 or 1 for every binding: a constant 0/1 or a single eq/neg atom.
bool IsIndicatorValue(const ir::DimExpr& e) {
  if (e.is_constant()) return e.constant() == 0 || e.constant() == 1;
  if (e.terms().size() != 1 || e.terms().begin()->second != 1 || e.terms().begin()->first.size() != 1) return false;
  auto atom = ir::ParseDimAtom(e.terms().begin()->first[0]);
  return atom && (atom->kind == ir::DimAtom::Kind::kEq || atom->kind == ir::DimAtom::Kind::kNeg);
}

std::optional<Values> Compute(const ir::Node& node, int64_t opset) {
  const std::string& op = node.op_type();
  const ir::Value* out = node.outputs().empty() ? nullptr : node.outputs()[0];
  // A float cast of known integers keeps them (a Range over float bounds, window functions):
  // exact up to 2^24 (FP32), beyond any size a shape computation gives.
  if (op == "Cast" && out && out->type().is_tensor() && (out->type().dtype() == ir::DType::kF32 || out->type().dtype() == ir::DType::kF64) &&
      IsIntegerType(node.inputs()[0]))
    return ValuesOf(node, 0, opset);
  if (!IsIntegerType(out)) return std::nullopt;
  auto in = [&](size_t i) { return ValuesOf(node, i, opset); };
  InferContext ctx(node, opset);

  if (op == "Shape") {
    const ir::Type& t = node.inputs()[0] ? node.inputs()[0]->type() : ir::Type();
    if (!t.is_tensor() || !t.shape().has_rank()) return std::nullopt;
    int64_t rank = t.shape().rank();
    int64_t start = opset >= 15 ? ctx.Int("start", 0) : 0, end = opset >= 15 ? ctx.Int("end", rank) : rank;
    auto clamp = [rank](int64_t v) { return std::clamp<int64_t>(v < 0 ? v + rank : v, 0, rank); };
    Values v;
    for (int64_t i = clamp(start); i < clamp(end); ++i) {
      auto e = ir::DimExpr::FromDim(t.shape().dims()[size_t(i)]);
      if (!e) return std::nullopt;
      v.push_back(*e);
    }
    return v;
  }
  if (op == "Size") {
    const ir::Type& t = node.inputs()[0] ? node.inputs()[0]->type() : ir::Type();
    if (!t.is_tensor() || !t.shape().has_rank()) return std::nullopt;
    auto p = ir::DimProduct(t.shape().dims());
    if (!p) return std::nullopt;
    return Values{*p};
  }
  if (op == "Identity" || op == "Reshape" || op == "Flatten" || op == "Squeeze" || op == "Unsqueeze") return in(0);
  if (op == "Cast") {
    // A float value computed from inputs, converted to an integer: a value expression symbol.
    if (!IsIntegerType(node.inputs()[0])) {
      ir::DType to = out->type().dtype();
      if (to != ir::DType::kI64 && to != ir::DType::kI32 && to != ir::DType::kBool) return std::nullopt;
      auto e = InputExprs(node, 0, opset);
      if (!e) return std::nullopt;
      Values v;
      for (const std::string& x : *e) {
        auto sym = value_expr::Symbol(to == ir::DType::kBool ? "bool" : "int", {x});
        if (!sym) return std::nullopt;
        v.push_back(ir::DimExpr::Symbol(*sym));
      }
      return v;
    }
    auto v = in(0);
    if (!v) return std::nullopt;
    ir::DType to = out->type().dtype();
    if (to == ir::DType::kI64) return v;
    // Other targets: constants that the target holds as they are (bool: 0/1); a symbolic value
    // could wrap at run time, so it is not followed.
    auto c = Constants(*v);
    if (!c) return std::nullopt;
    int64_t lo = 0, hi = 0;
    switch (to) {
      case ir::DType::kI32: lo = INT32_MIN, hi = INT32_MAX; break;
      case ir::DType::kU32: lo = 0, hi = UINT32_MAX; break;
      case ir::DType::kI16: lo = INT16_MIN, hi = INT16_MAX; break;
      case ir::DType::kU16: lo = 0, hi = UINT16_MAX; break;
      case ir::DType::kI8: lo = INT8_MIN, hi = INT8_MAX; break;
      case ir::DType::kU8: lo = 0, hi = UINT8_MAX; break;
      case ir::DType::kBool: lo = 0, hi = 1; break;
      default: return std::nullopt;
    }
    Values out_values;
    for (int64_t x : *c) {
      if (to == ir::DType::kBool) x = x != 0;
      if (x < lo || x > hi) return std::nullopt;
      out_values.push_back(ir::DimExpr::Constant(x));
    }
    return out_values;
  }
  if (op == "Concat") {
    if (RankOf(out) != 1) return std::nullopt;
    Values all;
    for (size_t i = 0; i < node.inputs().size(); ++i) {
      auto v = in(i);
      if (!v) return std::nullopt;
      all.insert(all.end(), v->begin(), v->end());
    }
    return all;
  }
  if (op == "Gather") {
    auto data = in(0);
    auto idx = in(1);
    if (!data || !idx || RankOf(node.inputs()[0]) != 1 || RankOf(node.inputs()[1]) > 1) return std::nullopt;
    auto k = Constants(*idx);
    if (!k) return std::nullopt;
    Values v;
    for (int64_t i : *k) {
      int64_t n = int64_t(data->size());
      if (i < -n || i >= n) return std::nullopt;
      v.push_back((*data)[size_t(i < 0 ? i + n : i)]);
    }
    return v;
  }
  if (op == "Slice") {
    auto data = in(0);
    if (!data || RankOf(node.inputs()[0]) != 1) return std::nullopt;
    int64_t n = int64_t(data->size()), start = 0, end = n, step = 1;
    std::vector<int64_t> starts, ends, axes{0}, steps{1};
    if (opset < 10) {
      auto s = ctx.Ints("starts"), e = ctx.Ints("ends");
      if (!s || !e) return std::nullopt;
      starts = *s, ends = *e;
      if (auto a = ctx.Ints("axes")) axes = *a;
    } else {
      auto s = in(1), e = in(2);
      if (!s || !e) return std::nullopt;
      auto sc = Constants(*s), ec = Constants(*e);
      if (!sc || !ec) return std::nullopt;
      starts = *sc, ends = *ec;
      if (node.inputs().size() > 3 && node.inputs()[3]) {
        auto a = in(3);
        if (!a || !Constants(*a)) return std::nullopt;
        axes = *Constants(*a);
      }
      if (node.inputs().size() > 4 && node.inputs()[4]) {
        auto st = in(4);
        if (!st || !Constants(*st)) return std::nullopt;
        steps = *Constants(*st);
      }
    }
    if (starts.size() != 1 || ends.size() != 1 || axes.size() != 1 || steps.size() != 1 || (axes[0] != 0 && axes[0] != -1)) return std::nullopt;
    step = steps[0];
    if (step == 0) return std::nullopt;
    auto norm = [n](int64_t v, int64_t lo, int64_t hi) { return std::clamp<int64_t>(v < 0 ? v + n : v, lo, hi); };
    if (step > 0) {
      start = norm(starts[0], 0, n);
      end = norm(ends[0], 0, n);
    } else {
      start = norm(starts[0], -1, n - 1);
      end = norm(ends[0], -1, n - 1);
    }
    Values v;
    for (int64_t i = start; step > 0 ? i < end : i > end; i += step) v.push_back((*data)[size_t(i)]);
    return v;
  }
  if ((op == "Max" || op == "Min") && node.inputs().size() == 2) {
    auto a = in(0), b = in(1);
    if (!a || !b) return std::nullopt;
    if (op == "Max") return Binary(*a, *b, [](const ir::DimExpr& x, const ir::DimExpr& y) { return ir::DimExpr::Max(x, y); });
    return Binary(*a, *b, [](const ir::DimExpr& x, const ir::DimExpr& y) { return ir::DimExpr::Min(x, y); });
  }
  if (op == "Add" || op == "Sub" || op == "Mul" || op == "Div") {
    auto a = in(0), b = in(1);
    if (!a || !b) return std::nullopt;
    if (op == "Add") return Binary(*a, *b, [](const ir::DimExpr& x, const ir::DimExpr& y) { return x.Add(y); });
    if (op == "Sub") return Binary(*a, *b, [](const ir::DimExpr& x, const ir::DimExpr& y) { return x.Sub(y); });
    if (op == "Mul") return Binary(*a, *b, [](const ir::DimExpr& x, const ir::DimExpr& y) { return x.Mul(y); });
    return Binary(*a, *b, Divide);
  }
  if (op == "Equal") {
    auto a = in(0), b = in(1);
    if (!a || !b) return std::nullopt;
    // Decided where the difference is a constant (x == x, x + 1 vs x), or cannot be 0 because
    // dims are >= 0 (batch vs -1, the test exporters emit before an Expand); else an eq atom.
    return Binary(*a, *b, [](const ir::DimExpr& x, const ir::DimExpr& y) { return ir::DimExpr::Eq(x, y); });
  }
  if (op == "Less" || op == "Greater") {  // a position computed from a value (sequence positions): lt atoms
    auto a = in(0), b = in(1);
    if (!a || !b) return std::nullopt;
    if (op == "Greater") std::swap(a, b);
    return Binary(*a, *b, [](const ir::DimExpr& x, const ir::DimExpr& y) { return ir::DimExpr::Lt(x, y); });
  }
  if (op == "Where") {
    auto c = in(0), x = in(1), y = in(2);
    if (!c || !x || !y) return std::nullopt;
    size_t n = std::max({c->size(), x->size(), y->size()});
    for (size_t s : {c->size(), x->size(), y->size()})
      if (s != n && s != 1) return std::nullopt;
    Values v;
    for (size_t k = 0; k < n; ++k) {
      // A condition known only as an expression (eq atoms) selects arithmetically; bool values are 0 or 1.
      const ir::DimExpr& cond = (*c)[c->size() == 1 ? 0 : k];
      auto pick = ir::DimExpr::Select(cond, (*x)[x->size() == 1 ? 0 : k], (*y)[y->size() == 1 ? 0 : k]);
      if (!pick || (!cond.is_constant() && !IsIndicatorValue(cond))) return std::nullopt;
      v.push_back(*pick);
    }
    return v;
  }
  if (op == "ConstantOfShape") {
    auto shape = in(0);
    if (!shape) return std::nullopt;
    auto dims = Constants(*shape);
    if (!dims) return std::nullopt;
    int64_t count = 1;
    for (int64_t d : *dims) {
      if (d < 0 || (d > 0 && count > int64_t(kMaxKnownValues) / d)) return std::nullopt;
      count *= d;
    }
    int64_t fill = 0;
    if (const ir::Attribute* a = node.FindAttribute("value")) {
      if (a->kind != ir::Attribute::Kind::kTensor || !a->t.has_data() || a->t.NumElements() != 1) return std::nullopt;
      ir::DType dt = a->t.dtype();
      const uint8_t* p = a->t.buffer().data();
      if (dt == ir::DType::kI64) std::memcpy(&fill, p, 8);
      else if (dt == ir::DType::kI32) { int32_t x; std::memcpy(&x, p, 4); fill = x; }
      else return std::nullopt;
    }
    return Values(size_t(count), ir::DimExpr::Constant(fill));
  }
  return std::nullopt;
}

// The rounding a value of `dt` takes after an arithmetic operation ("" for FP64).
std::optional<std::string> RoundingOf(ir::DType dt) {
  switch (dt) {
    case ir::DType::kF32: return std::string("f32");
    case ir::DType::kF16: return std::string("f16");
    case ir::DType::kBF16: return std::string("bf16");
    case ir::DType::kF64: return std::string();
    default: return std::nullopt;
  }
}

std::optional<std::string> Rounded(const std::optional<std::string>& e, const std::string& rounding) {
  if (!e || rounding.empty() || e->compare(0, rounding.size() + 1, rounding + "_") == 0) return e;  // rounded already
  return value_expr::Apply(rounding, {*e});
}

}  // namespace

std::optional<std::vector<std::string>> InputExprs(const ir::Node& node, size_t i, int64_t opset) {
  if (i >= node.inputs().size() || !node.inputs()[i]) return std::nullopt;
  const ir::Value* v = node.inputs()[i];
  if (v->known_exprs()) return *v->known_exprs();
  std::vector<std::string> out;
  if (v->is_constant() && v->data() && v->data()->has_data() && v->data()->dtype() != ir::DType::kString) {
    if (v->data()->NumElements() > int64_t(kMaxKnownExprs)) return std::nullopt;
    InferContext ctx(node, opset);
    auto f = ctx.ConstantFloats(i);
    if (!f.ok()) return std::nullopt;
    for (double x : *f) out.push_back(value_expr::Constant(x));
    return out;
  }
  const std::vector<ir::DimExpr>* known = v->known_values();
  if (!known || known->size() > kMaxKnownExprs) return std::nullopt;
  for (const ir::DimExpr& e : *known) {
    auto x = ValueExprOf(e);
    if (!x) return std::nullopt;
    out.push_back(*x);
  }
  return out;
}

std::optional<std::string> ValueExprOf(const ir::DimExpr& e) {
  // A polynomial over integer value symbols: the sum of its terms (exact in double for the
  // integers sizes are made of).
  std::optional<std::string> sum;
  for (const auto& [monomial, coeff] : e.terms()) {
    std::optional<std::string> term = value_expr::Constant(double(coeff));
    for (const std::string& sym : monomial) {
      size_t input = 0, element = 0;
      int64_t scale = 0;
      if (!ir::DimExpr::ParseValueSymbol(sym, &input, &element, &scale) || scale != 0) return std::nullopt;
      term = coeff == 1 && monomial.size() == 1 ? value_expr::Input(input, element) : value_expr::Apply("mul", {*term, value_expr::Input(input, element)});
      if (!term) return std::nullopt;
    }
    sum = sum ? value_expr::Apply("add", {*sum, *term}) : term;
    if (!sum) return std::nullopt;
  }
  return sum ? *sum : value_expr::Constant(0);
}

std::optional<std::vector<std::string>> KnownExprs(const ir::Node& node, int64_t opset) {
  if (!node.domain().empty() || node.outputs().empty() || !node.outputs()[0] || node.inputs().empty()) return std::nullopt;
  const ir::Value* out = node.outputs()[0];
  const ir::Type& t = out->type();
  if (!t.is_tensor() || !ir::IsFloat(t.dtype()) || !t.shape().is_static()) return std::nullopt;
  auto count = t.shape().NumElements();
  if (!count || *count > int64_t(kMaxKnownExprs)) return std::nullopt;
  auto rounding = RoundingOf(t.dtype());
  if (!rounding) return std::nullopt;
  const std::string& op = node.op_type();
  std::vector<std::string> v;
  auto in = [&](size_t i) { return InputExprs(node, i, opset); };
  if (op == "Identity" || op == "Reshape" || op == "Flatten" || op == "Squeeze" || op == "Unsqueeze") {
    auto a = in(0);
    if (!a) return std::nullopt;
    v = *a;
  } else if (op == "Cast") {
    auto a = in(0);
    if (!a) return std::nullopt;
    for (const std::string& x : *a) {
      auto r = Rounded(x, *rounding);
      if (!r) return std::nullopt;
      v.push_back(*r);
    }
  } else if (op == "Ceil" || op == "Floor" || op == "Neg" || op == "Abs" || op == "Relu" || op == "Round") {
    auto a = in(0);
    if (!a) return std::nullopt;
    std::string name = op;
    name[0] = char(std::tolower(name[0]));
    for (const std::string& x : *a) {
      auto r = value_expr::Apply(name, {x});
      if (!r) return std::nullopt;
      v.push_back(*r);
    }
  } else if ((op == "Add" || op == "Sub" || op == "Mul" || op == "Div" || op == "Max" || op == "Min") && node.inputs().size() == 2) {
    auto a = in(0), b = in(1);
    if (!a || !b || (a->size() != b->size() && a->size() != 1 && b->size() != 1)) return std::nullopt;
    std::string name = op;
    name[0] = char(std::tolower(name[0]));
    for (size_t k = 0; k < std::max(a->size(), b->size()); ++k) {
      auto r = Rounded(value_expr::Apply(name, {(*a)[a->size() == 1 ? 0 : k], (*b)[b->size() == 1 ? 0 : k]}), *rounding);
      if (!r) return std::nullopt;
      v.push_back(*r);
    }
  } else {
    return std::nullopt;
  }
  if (int64_t(v.size()) != *count) return std::nullopt;
  // Nothing run-time: constants are folded as usual.
  for (const std::string& x : v) {
    auto leaves = value_expr::Leaves(x);
    if (leaves && !leaves->empty()) return v;
  }
  return std::nullopt;
}

std::optional<std::vector<ir::DimExpr>> KnownValues(const ir::Node& node, int64_t opset) {
  if (!node.domain().empty() || node.outputs().empty() || !node.outputs()[0]) return std::nullopt;
  auto v = Compute(node, opset);
  if (!v || v->size() > kMaxKnownValues) return std::nullopt;
  // The count must agree with the output's type where that is static.
  const ir::Type& t = node.outputs()[0]->type();
  if (t.is_tensor() && t.shape().is_static() && t.shape().NumElements() && *t.shape().NumElements() != int64_t(v->size())) return std::nullopt;
  return v;
}

std::optional<DimExprs> DimExprsOf(const std::vector<ir::Dim>& dims) {
  DimExprs out;
  for (const ir::Dim& d : dims) {
    auto e = ir::DimExpr::FromDim(d);
    if (!e) return std::nullopt;
    out.push_back(*e);
  }
  return out;
}

std::optional<ir::DimExpr> AxisValue(const ir::DimExpr& a, int64_t rank) {
  auto neg = ir::DimExpr::Lt(a, ir::DimExpr());
  auto shift = neg ? neg->Mul(ir::DimExpr::Constant(rank)) : std::nullopt;
  return shift ? a.Add(*shift) : std::nullopt;
}

std::optional<ir::DimExpr> DimAt(const DimExprs& dims, const ir::DimExpr& index) {
  if (index.is_constant()) {
    if (index.constant() < 0 || index.constant() >= int64_t(dims.size())) return std::nullopt;
    return dims[size_t(index.constant())];
  }
  ir::DimExpr sum;
  for (size_t m = 0; m < dims.size(); ++m) {
    auto eq = ir::DimExpr::Eq(index, ir::DimExpr::Constant(int64_t(m)));
    auto term = eq ? eq->Mul(dims[m]) : std::nullopt;
    auto next = term ? sum.Add(*term) : std::nullopt;
    if (!next) return std::nullopt;
    sum = *next;
  }
  return sum;
}

std::optional<ir::DimExpr> IsAmong(const DimExprs& axes, int64_t j) {
  // 1 - prod(1 - [a == j]): exact also when an axis repeats.
  ir::DimExpr none = ir::DimExpr::Constant(1);
  for (const ir::DimExpr& a : axes) {
    auto eq = ir::DimExpr::Eq(a, ir::DimExpr::Constant(j));
    auto miss = eq ? ir::DimExpr::Constant(1).Sub(*eq) : std::nullopt;
    auto next = miss ? none.Mul(*miss) : std::nullopt;
    if (!next) return std::nullopt;
    none = *next;
  }
  return ir::DimExpr::Constant(1).Sub(none);
}

std::optional<ir::DimExpr> CountBelow(const DimExprs& axes, int64_t j) {
  ir::DimExpr n;
  for (const ir::DimExpr& a : axes) {
    auto lt = ir::DimExpr::Lt(a, ir::DimExpr::Constant(j));
    auto next = lt ? n.Add(*lt) : std::nullopt;
    if (!next) return std::nullopt;
    n = *next;
  }
  return n;
}

std::optional<DimExprs> DropAxes(const DimExprs& dims, const DimExprs& axes) {
  if (axes.size() > dims.size()) return std::nullopt;
  DimExprs out;
  for (size_t j = 0; j < dims.size() - axes.size(); ++j) {
    // Dim m lands at m - (axes below m) when it is kept.
    ir::DimExpr sum;
    for (size_t m = j; m < dims.size() && m <= j + axes.size(); ++m) {
      auto among = IsAmong(axes, int64_t(m));
      auto kept = among ? ir::DimExpr::Constant(1).Sub(*among) : std::nullopt;
      auto below = CountBelow(axes, int64_t(m));
      auto pos = below ? ir::DimExpr::Constant(int64_t(m)).Sub(*below) : std::nullopt;
      auto at = pos ? ir::DimExpr::Eq(*pos, ir::DimExpr::Constant(int64_t(j))) : std::nullopt;
      auto both = kept && at ? kept->Mul(*at) : std::nullopt;
      auto term = both ? both->Mul(dims[m]) : std::nullopt;
      auto next = term ? sum.Add(*term) : std::nullopt;
      if (!next) return std::nullopt;
      sum = *next;
    }
    out.push_back(sum);
  }
  return out;
}

std::optional<ir::DimExpr> SliceLength(const ir::DimExpr& start, const ir::DimExpr& end, const ir::DimExpr& step, const ir::DimExpr& dim) {
  using E = ir::DimExpr;
  auto from_end = [&](const E& v) -> std::optional<E> {  // v + dim * (v < 0)
    auto neg = E::Lt(v, E());
    auto shift = neg ? neg->Mul(dim) : std::nullopt;
    return shift ? v.Add(*shift) : std::nullopt;
  };
  auto clamp = [](const std::optional<E>& v, const std::optional<E>& lo, const std::optional<E>& hi) -> std::optional<E> {
    auto up = v && lo ? E::Max(*v, *lo) : std::nullopt;
    return up && hi ? E::Min(*up, *hi) : std::nullopt;
  };
  auto s = from_end(start), e = from_end(end);
  auto dim_less_1 = dim.Sub(E::Constant(1));
  std::optional<E> forward, backward;
  if (!step.is_constant() || step.constant() > 0) {
    // ceil((e - s) / step), at least 0.
    auto s0 = clamp(s, E(), dim), e0 = clamp(e, E(), dim);
    auto span = s0 && e0 ? e0->Sub(*s0) : std::nullopt;
    auto up = span ? span->Add(step) : std::nullopt;
    auto up1 = up ? up->Sub(E::Constant(1)) : std::nullopt;
    auto q = up1 ? up1->FloorDivBy(step) : std::nullopt;
    forward = q ? E::Max(*q, E()) : std::nullopt;
    if (!forward) return std::nullopt;
  }
  if (!step.is_constant() || step.constant() < 0) {
    auto s0 = clamp(s, E(), dim_less_1), e0 = clamp(e, E::Constant(-1), dim_less_1);
    auto back = E().Sub(step);
    auto span = s0 && e0 ? s0->Sub(*e0) : std::nullopt;
    auto up = span && back ? span->Add(*back) : std::nullopt;
    auto up1 = up ? up->Sub(E::Constant(1)) : std::nullopt;
    auto q = up1 && back ? up1->FloorDivBy(*back) : std::nullopt;
    backward = q ? E::Max(*q, E()) : std::nullopt;
    if (!backward) return std::nullopt;
  }
  if (step.is_constant()) return step.constant() > 0 ? forward : step.constant() < 0 ? backward : std::nullopt;
  auto neg = E::Lt(step, E());
  return neg ? E::Select(*neg, *backward, *forward) : std::nullopt;
}

std::optional<ir::DimExpr> FloatInputValue(const ir::Node& node, size_t i, size_t element, int64_t scale) {
  const ir::Value* v = i < node.inputs().size() ? node.inputs()[i] : nullptr;
  if (!v || v->kind() != ir::Value::Kind::kInput || !v->owner() || v->owner()->parent_node() || scale < 1) return std::nullopt;
  const ir::Type& t = v->type();
  if (!t.is_tensor() || !ir::IsFloat(t.dtype()) || !t.shape().is_static() || t.shape().rank() > 1) return std::nullopt;
  auto n = t.shape().NumElements();
  if (!n || *n > 16 || int64_t(element) >= *n) return std::nullopt;
  const auto& inputs = v->owner()->inputs();
  auto it = std::find(inputs.begin(), inputs.end(), v);
  if (it == inputs.end()) return std::nullopt;
  return ir::DimExpr::Symbol(ir::DimExpr::FloatValueSymbol(size_t(it - inputs.begin()), element, scale));
}

bool AnyValueSymbols(const DimExprs& values) {
  return std::any_of(values.begin(), values.end(), [](const ir::DimExpr& e) { return e.HasValueSymbols(); });
}

std::vector<ir::Dim> ToDims(const DimExprs& e) {
  std::vector<ir::Dim> out;
  for (const ir::DimExpr& x : e) out.push_back(x.ToDim());
  return out;
}

ir::Dim DataDim(const ir::Node& node) {
  const ir::Value* out = node.outputs().empty() ? nullptr : node.outputs()[0];
  std::string name = out ? out->name() : node.name();
  std::string clean;
  for (char c : name) clean += std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
  if (clean.size() > 40) clean.resize(40);
  uint64_t h = 1469598103934665603ull;  // FNV-1a of the full name: sanitized names may collide
  for (char c : name) h = (h ^ uint8_t(c)) * 1099511628211ull;
  char hex[9];
  std::snprintf(hex, sizeof hex, "%08x", unsigned(h ^ (h >> 32)));
  return ir::Dim::Symbolic(std::string(kDataDimPrefix) + clean + "_" + hex);
}

std::optional<std::pair<size_t, size_t>> DataDimOutput(const ir::Node& node) {
  ir::Dim d = DataDim(node);
  for (size_t o = 0; o < node.outputs().size(); ++o) {
    if (!node.outputs()[o]) continue;
    const ir::Type& t = node.outputs()[o]->type();
    if (!t.is_tensor() || !t.shape().has_rank()) continue;
    for (size_t k = 0; k < t.shape().dims().size(); ++k)
      if (t.shape().dims()[k] == d) return std::make_pair(o, k);
  }
  return std::nullopt;
}

std::optional<size_t> DataDimAxis(const ir::Node& node) {
  auto o = DataDimOutput(node);
  return o ? std::optional<size_t>(o->second) : std::nullopt;
}

std::optional<ir::DimExpr> DataDimBound(const ir::Node& node) {
  auto dims_of = [&](size_t i) -> std::optional<DimExprs> {
    if (i >= node.inputs().size() || !node.inputs()[i] || !node.inputs()[i]->type().is_tensor() || !node.inputs()[i]->type().shape().has_rank())
      return std::nullopt;
    return DimExprsOf(node.inputs()[i]->type().shape().dims());
  };
  auto product = [](const DimExprs& d) -> std::optional<ir::DimExpr> {
    std::optional<ir::DimExpr> p = ir::DimExpr::Constant(1);
    for (const ir::DimExpr& e : d) p = p ? p->Mul(e) : std::nullopt;
    return p;
  };
  const std::string& op = node.op_type();
  if (!node.domain().empty()) return std::nullopt;
  if (op == "NonZero") {
    auto x = dims_of(0);
    return x ? product(*x) : std::nullopt;
  }
  if (op == "Compress") {
    auto c = dims_of(1);  // at most the condition's length entries are kept
    return c && c->size() == 1 ? std::optional<ir::DimExpr>((*c)[0]) : std::nullopt;
  }
  if (op == "Unique") {
    auto x = dims_of(0);
    if (!x) return std::nullopt;
    const ir::Attribute* a = node.FindAttribute("axis");
    if (!a) return product(*x);
    int64_t axis = a->i < 0 ? a->i + int64_t(x->size()) : a->i;
    if (axis < 0 || axis >= int64_t(x->size())) return std::nullopt;
    return (*x)[size_t(axis)];
  }
  if (op == "NonMaxSuppression") {
    auto scores = dims_of(1);  // [batches, classes, boxes]: each class of each batch keeps at most its boxes
    return scores && scores->size() == 3 ? product(*scores) : std::nullopt;
  }
  if (op == "Loop") {
    // A loop whose body computes its condition: at most M iterations (a constant or a value
    // inputs bind).
    const ir::Value* m = node.inputs().empty() ? nullptr : node.inputs()[0];
    std::optional<ir::DimExpr> trips;
    if (m && m->known_values() && m->known_values()->size() == 1) trips = (*m->known_values())[0];
    if (m && m->is_constant() && m->data() && m->data()->has_data() && m->data()->NumElements() == 1 && m->data()->dtype() == ir::DType::kI64) {
      int64_t v = 0;
      std::memcpy(&v, m->data()->buffer().data(), 8);
      trips = ir::DimExpr::Constant(v);
    }
    return trips ? ir::DimExpr::Max(*trips, ir::DimExpr()) : std::nullopt;
  }
  return std::nullopt;
}

}  // namespace precis::ops
