// The gradient rules (see gradient.h) and the builders they use. Each rule is a few lines of IR
// ops; the algebra is in the comment above it (g: the gradient of the output, y: the output).
#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>

#include "compiler/ir/dtype.h"
#include "compiler/ops/gradient.h"
#include "compiler/ops/gradient_rules.h"
#include "compiler/ops/op_registry.h"
#include "runtime/base/check.h"

namespace precis::ops {

std::vector<int64_t> IrBuilder::Dims(const ir::Value* v) const {
  std::vector<int64_t> dims;
  PRECIS_CHECK(v->type().is_tensor() && v->type().shape().is_static()) << what_ << ": value '" << v->name() << "' has no static shape";
  for (const ir::Dim& d : v->type().shape().dims()) dims.push_back(d.value());
  return dims;
}

int64_t GradContext::Int(const char* name, int64_t fallback) const {
  const ir::Attribute* a = node_.FindAttribute(name);
  return a && a->kind == ir::Attribute::Kind::kInt ? a->i : fallback;
}

float GradContext::Float(const char* name, float fallback) const {
  const ir::Attribute* a = node_.FindAttribute(name);
  return a && a->kind == ir::Attribute::Kind::kFloat ? a->f : fallback;
}

std::vector<int64_t> GradContext::Ints(const char* name, std::vector<int64_t> fallback) const {
  const ir::Attribute* a = node_.FindAttribute(name);
  return a && a->kind == ir::Attribute::Kind::kInts ? a->ints : fallback;
}

std::vector<GradAttr> GradContext::CopyAttrs(const std::vector<const char*>& names) const {
  std::vector<GradAttr> out;
  for (const char* name : names) {
    const ir::Attribute* a = node_.FindAttribute(name);
    if (!a) continue;
    using K = ir::Attribute::Kind;
    PRECIS_CHECK(a->kind == K::kInt || a->kind == K::kFloat || a->kind == K::kInts || a->kind == K::kString)
        << "CopyAttrs: attribute '" << name << "' of " << node_.Describe() << " is not an int, float, ints or string";
    GradAttr& g = out.emplace_back();
    g.name = name;
    g.kind = a->kind;
    g.i = a->i;
    g.f = a->f;
    g.ints = a->ints;
    g.s = a->s;
  }
  return out;
}

std::string IrBuilder::Fresh(const std::string& base) {
  std::string stem = base;
  for (int i = 0;; ++i) {
    std::string name = i ? stem + std::to_string(i) : stem;
    if (!graph_.FindLocal(name)) return name;
  }
}

namespace {

std::vector<int64_t> ConstantInts(const ir::Value* v) {
  PRECIS_CHECK(v && v->is_constant() && v->data() && v->data()->dtype() == ir::DType::kI64) << "built axes and bounds are i64 constants";
  std::vector<int64_t> out(size_t(v->data()->NumElements()));
  if (!out.empty()) std::memcpy(out.data(), v->data()->buffer().data(), out.size() * sizeof(int64_t));
  return out;
}

// The rules write ReduceSum and Slice in their current form (axes, starts and ends as inputs);
// models of older opsets get the attribute form of their version instead (ReduceSum before 13,
// Slice before 10), since a node takes the semantics of the model's opset.
void ToOpsetForm(const std::string& op, int64_t opset, std::vector<ir::Value*>& inputs, std::vector<GradAttr>& specs) {
  if (op == "ReduceSum" && opset < 13 && inputs.size() > 1) {
    if (inputs[1]) specs.push_back(GradAttr::Ints("axes", ConstantInts(inputs[1])));
    inputs.resize(1);
  } else if (op == "Slice" && opset < 10 && inputs.size() > 1) {
    const char* names[] = {"", "starts", "ends", "axes"};
    for (size_t i = 1; i < inputs.size() && i < 4; ++i)
      if (inputs[i]) specs.push_back(GradAttr::Ints(names[i], ConstantInts(inputs[i])));
    if (inputs.size() > 4 && inputs[4]) {
      for (int64_t step : ConstantInts(inputs[4])) PRECIS_CHECK(step == 1) << "Slice before opset 10 has no steps";
    }
    inputs.resize(1);
  }
}

}  // namespace

std::vector<ir::Value*> IrBuilder::OpN(const std::string& op, std::vector<ir::Value*> inputs, std::vector<GradAttr> specs,
                                         size_t outputs) {
  ToOpsetForm(op, opset_, inputs, specs);
  std::vector<ir::Attribute> attrs;
  for (GradAttr& spec : specs) {
    ir::Attribute& a = attrs.emplace_back();
    a.name = spec.name;
    a.kind = spec.kind;
    a.i = spec.i;
    a.f = spec.f;
    a.ints = std::move(spec.ints);
    a.s = std::move(spec.s);
  }
  std::vector<ir::Value*> outs;
  for (size_t i = 0; i < outputs; ++i) outs.push_back(graph_.NewValue(Fresh(base_ + "_" + op)));
  std::string name = base_ + "/" + op;
  if (number_node_names_) {
    int k = node_names_[op]++;
    if (k) name += std::to_string(k);
  } else {
    name = Fresh(name);
  }
  ir::Node* n = graph_.AddNode("", op, std::move(name), std::move(inputs), outs, std::move(attrs));
  if (!type_outputs_) return outs;
  const OpDef* def = OpRegistry::Get().Find("", op);
  PRECIS_CHECK(def && def->infer) << what_ << " uses " << op << ", which has no definition";
  InferContext ctx(*n, opset_);
  Status s = def->infer(ctx);
  PRECIS_CHECK(s.ok()) << what_ << ": " << s.ToString();
  for (size_t i = 0; i < outputs && i < ctx.outputs().size(); ++i) outs[i]->set_type(ctx.outputs()[i]);
  return outs;
}

ir::Value* IrBuilder::Op(const std::string& op, std::vector<ir::Value*> inputs, std::vector<GradAttr> attrs) {
  return OpN(op, std::move(inputs), std::move(attrs), 1)[0];
}

namespace {

std::vector<uint8_t> FloatBytes(const std::vector<double>& values, ir::DType dtype) {
  PRECIS_CHECK(dtype == ir::DType::kF32 || dtype == ir::DType::kF64) << "built constants are f32 or f64 (16-bit values come from casts)";
  std::vector<uint8_t> bytes(values.size() * size_t(ir::DTypeSize(dtype)));
  for (size_t i = 0; i < values.size(); ++i) {
    if (dtype == ir::DType::kF64) std::memcpy(bytes.data() + 8 * i, &values[i], 8);
    else {
      float f = float(values[i]);
      std::memcpy(bytes.data() + 4 * i, &f, 4);
    }
  }
  return bytes;
}

}  // namespace

ir::Value* IrBuilder::Scalar(double value, ir::DType dtype) {
  return graph_.AddConstant(Fresh(base_ + "_const"), ir::Tensor(dtype, {}, ir::Buffer::Own(FloatBytes({value}, dtype))));
}

ir::Value* IrBuilder::Floats(const std::vector<double>& values, ir::DType dtype) {
  return graph_.AddConstant(Fresh(base_ + "_const"), ir::Tensor(dtype, {int64_t(values.size())}, ir::Buffer::Own(FloatBytes(values, dtype))));
}

ir::Value* IrBuilder::Zeros(const std::vector<int64_t>& dims, ir::DType dtype) {
  return Op("Expand", {Scalar(0.0, dtype), Int64s(dims)});
}

ir::Value* IrBuilder::CastTo(ir::Value* v, ir::DType dtype) {
  return Dtype(v) == dtype ? v : Op("Cast", {v}, {GradAttr::Int("to", int64_t(ir::DTypeToOnnx(dtype)))});
}

ir::Value* IrBuilder::Int64s(const std::vector<int64_t>& values) {
  std::vector<uint8_t> bytes(values.size() * 8);
  if (!values.empty()) std::memcpy(bytes.data(), values.data(), bytes.size());
  return graph_.AddConstant(Fresh(base_ + "_ints"), ir::Tensor(ir::DType::kI64, {int64_t(values.size())}, ir::Buffer::Own(std::move(bytes))));
}

ir::Value* IrBuilder::SumAxes(ir::Value* g, const std::vector<int64_t>& axes, bool keepdims) {
  if (axes.empty()) return g;
  return Op("ReduceSum", {g, Int64s(axes)}, {GradAttr::Int("keepdims", keepdims ? 1 : 0)});
}

// Sum over the leading dims `like` lacks and the dims where it has 1 and g does not.
ir::Value* IrBuilder::Unbroadcast(ir::Value* g, const ir::Value* like) {
  std::vector<int64_t> gd = Dims(g), ld = Dims(like);
  if (gd == ld) return g;
  size_t lead = gd.size() - ld.size();
  std::vector<int64_t> axes;
  for (size_t i = 0; i < gd.size(); ++i)
    if (i < lead || (ld[i - lead] == 1 && gd[i] != 1)) axes.push_back(int64_t(i));
  ir::Value* summed = SumAxes(g, axes, true);
  return Op("Reshape", {summed, Int64s(ld)});
}

namespace {

using G = GradContext;
using V = std::vector<ir::Value*>;
using namespace grad;

// Transpose(v, perm), without materializing what cancels: a v that is itself Transpose(x, p)
// with p then perm the identity is x (a weight the forward pass transposed, K^T in attention);
// a 2-D v that a Gemm without C just produced (no reader yet: a gradient being built) is the
// Gemm with its operands swapped, (op(A) op(B))^T = op(B)^T op(A)^T.
ir::Value* TransposeOf(G& c, ir::Value* v, const std::vector<int64_t>& perm) {
  if (v->kind() == ir::Value::Kind::kNodeOutput && v->producer()) {
    const ir::Node* t = v->producer();
    if (t->op_type() == "Transpose" && t->inputs().size() == 1 && t->inputs()[0]) {
      std::vector<int64_t> p;
      if (const ir::Attribute* a = t->FindAttribute("perm"); a && a->kind == ir::Attribute::Kind::kInts) p = a->ints;
      if (p.empty())
        for (size_t i = 0; i < perm.size(); ++i) p.push_back(int64_t(perm.size() - 1 - i));
      bool identity = p.size() == perm.size();
      for (size_t i = 0; identity && i < perm.size(); ++i) identity = p[size_t(perm[i])] == int64_t(i);
      if (identity) return t->inputs()[0];
    }
    auto attr_int = [&](const char* name, int64_t fallback) {
      const ir::Attribute* a = t->FindAttribute(name);
      return a && a->kind == ir::Attribute::Kind::kInt ? a->i : fallback;
    };
    auto attr_float = [&](const char* name) {
      const ir::Attribute* a = t->FindAttribute(name);
      return a && a->kind == ir::Attribute::Kind::kFloat ? a->f : 1.0f;
    };
    if (t->op_type() == "Gemm" && perm == std::vector<int64_t>{1, 0} && v->uses().empty() && t->outputs().size() == 1 &&
        (t->inputs().size() == 2 || (t->inputs().size() == 3 && !t->inputs()[2])) && attr_float("alpha") == 1.0f && attr_float("beta") == 1.0f)
      return c.Op("Gemm", {t->inputs()[1], t->inputs()[0]},
                  {GradAttr::Int("transA", attr_int("transB", 0) ? 0 : 1), GradAttr::Int("transB", attr_int("transA", 0) ? 0 : 1)});
  }
  return c.Op("Transpose", {v}, {GradAttr::Ints("perm", perm)});
}

// The last two axes swapped (matrix transpose of a batch).
ir::Value* SwapLast(G& c, ir::Value* v) {
  size_t r = c.Dims(v).size();
  std::vector<int64_t> perm(r);
  std::iota(perm.begin(), perm.end(), 0);
  std::swap(perm[r - 1], perm[r - 2]);
  return TransposeOf(c, v, perm);
}

// Reduction axes of a ReduceSum/ReduceMean node, normalized and sorted (all axes when empty).
std::vector<int64_t> ReduceAxes(G& c) {
  std::vector<int64_t> axes;
  int64_t rank = int64_t(c.Dims(c.in(0)).size());
  if (c.in(1) && c.in(1)->is_constant()) {
    const ir::Tensor& t = *c.in(1)->data();
    axes.resize(size_t(t.NumElements()));
    if (!axes.empty()) std::memcpy(axes.data(), t.buffer().data(), axes.size() * 8);
  } else {
    axes = c.Ints("axes");
  }
  if (axes.empty()) {
    axes.resize(size_t(rank));
    std::iota(axes.begin(), axes.end(), 0);
  }
  for (int64_t& a : axes) a = a < 0 ? a + rank : a;
  std::sort(axes.begin(), axes.end());
  return axes;
}

// g of a reduction, expanded back over the reduced axes to the input's shape.
ir::Value* ExpandReduced(G& c, ir::Value* g, const std::vector<int64_t>& axes) {
  std::vector<int64_t> in = c.Dims(c.in(0)), kept = in;
  for (int64_t a : axes) kept[size_t(a)] = 1;
  ir::Value* shaped = c.Dims(g) == kept ? g : c.Op("Reshape", {g, c.Int64s(kept)});
  return c.Op("Expand", {shaped, c.Int64s(in)});
}

int64_t SoftmaxAxis(G& c) {
  int64_t axis = c.Int("axis", -1);
  return axis < 0 ? axis + int64_t(c.Dims(c.in(0)).size()) : axis;
}

// dA = g, dB = g (each unbroadcast)
V AddGrad(G& c) { return {c.Unbroadcast(c.grad(0), c.in(0)), c.Unbroadcast(c.grad(0), c.in(1))}; }
// dA = g, dB = -g
V SubGrad(G& c) { return {c.Unbroadcast(c.grad(0), c.in(0)), c.wants(1) ? c.Unbroadcast(c.Op("Neg", {c.grad(0)}), c.in(1)) : nullptr}; }
// dA = g*B, dB = g*A
V MulGrad(G& c) {
  return {c.wants(0) ? c.Unbroadcast(c.Op("Mul", {c.grad(0), c.in(1)}), c.in(0)) : nullptr,
          c.wants(1) ? c.Unbroadcast(c.Op("Mul", {c.grad(0), c.in(0)}), c.in(1)) : nullptr};
}
// y = A/B: dA = g/B, dB = -g*y/B
V DivGrad(G& c) {
  return {c.wants(0) ? c.Unbroadcast(c.Op("Div", {c.grad(0), c.in(1)}), c.in(0)) : nullptr,
          c.wants(1) ? c.Unbroadcast(c.Op("Neg", {c.Op("Div", {c.Op("Mul", {c.grad(0), c.out(0)}), c.in(1)})}), c.in(1)) : nullptr};
}
// y = A^B: dA = g*B*A^(B-1), dB = g*y*log(A)
V PowGrad(G& c) {
  ir::DType t = c.Dtype(c.in(0));
  ir::Value* da = nullptr;
  ir::Value* db = nullptr;
  if (c.wants(0)) {
    ir::Value* b = c.Dtype(c.in(1)) == t ? c.in(1) : c.Op("Cast", {c.in(1)}, {GradAttr::Int("to", int64_t(ir::DTypeToOnnx(t)))});
    ir::Value* pw = c.Op("Pow", {c.in(0), c.Op("Sub", {b, c.Scalar(1.0, t)})});
    da = c.Unbroadcast(c.Op("Mul", {c.Op("Mul", {c.grad(0), b}), pw}), c.in(0));
  }
  if (c.wants(1)) db = c.Unbroadcast(c.Op("Mul", {c.Op("Mul", {c.grad(0), c.out(0)}), c.Op("Log", {c.in(0)})}), c.in(1));
  return {da, db};
}
V NegGrad(G& c) { return {c.Op("Neg", {c.grad(0)})}; }
V IdentityGrad(G& c) { return {c.grad(0)}; }
// dx = g * (x > 0), one gradient kernel (no mask tensor)
V ReluGrad(G& c) { return {c.Op("ReluGrad", {c.grad(0), c.in(0)})}; }
// dx = g*y*(1-y)
V SigmoidGrad(G& c) {
  ir::Value* y = c.out(0);
  return {c.Op("Mul", {c.Op("Mul", {c.grad(0), y}), c.Op("Sub", {c.Scalar(1.0, c.Dtype(y)), y})})};
}
// dx = g*(1-y^2)
V TanhGrad(G& c) {
  ir::Value* y = c.out(0);
  return {c.Op("Mul", {c.grad(0), c.Op("Sub", {c.Scalar(1.0, c.Dtype(y)), c.Op("Mul", {y, y})})})};
}
// dx = g*y
V ExpGrad(G& c) { return {c.Op("Mul", {c.grad(0), c.out(0)})}; }
// dx = g/x
V LogGrad(G& c) { return {c.Op("Div", {c.grad(0), c.in(0)})}; }
// dx = g/(2y)
V SqrtGrad(G& c) { return {c.Op("Div", {c.grad(0), c.Op("Mul", {c.out(0), c.Scalar(2.0, c.Dtype(c.out(0)))})})}; }
// dx = g * 2/sqrt(pi) * exp(-x^2)
V ErfGrad(G& c) {
  ir::Value* x = c.in(0);
  ir::Value* e = c.Op("Exp", {c.Op("Neg", {c.Op("Mul", {x, x})})});
  return {c.Op("Mul", {c.Op("Mul", {c.grad(0), e}), c.Scalar(2.0 / std::sqrt(M_PI), c.Dtype(x))})};
}
// dx = g * sign(x)
V AbsGrad(G& c) { return {c.Op("Mul", {c.grad(0), c.Op("Sign", {c.in(0)})})}; }
// y = A@B (rank >= 2): dA = g@B^T, dB = A^T@g (batch dims unbroadcast). A weight B [K, N] under
// a batched A [..., M, K] (a Linear layer over a sequence) gets dB as one product over all P =
// batch x M rows, A' = A as [P, K] and g' = g as [P, N]: dB = A'^T g' (Gemm with transA; before
// opset 11, where Gemm needs C, a Transpose and a MatMul). One FP32 accumulation over P, written
// FP32 for FP32 weight gradients, rather than a product per batch item rounded to its 16-bit dtype
// in mixed-precision plans and summed afterwards.
V MatMulGrad(G& c) {
  // dA first: its product is then not the last reader of g, the reshape of g below is (which the
  // memory planner can then run in place).
  ir::Value* da = c.wants(0) ? c.Unbroadcast(c.Op("MatMul", {c.grad(0), SwapLast(c, c.in(1))}), c.in(0)) : nullptr;
  ir::Value* db = nullptr;
  if (c.wants(1)) {
    std::vector<int64_t> ad = c.Dims(c.in(0)), bd = c.Dims(c.in(1));
    if (bd.size() == 2 && ad.size() >= 3) {
      int64_t K = ad.back(), N = bd[1], P = 1;
      for (size_t i = 0; i + 1 < ad.size(); ++i) P *= ad[i];
      ir::Value* a = c.Op("Reshape", {c.in(0), c.Int64s({P, K})});
      ir::Value* g = c.Op("Reshape", {c.grad(0), c.Int64s({P, N})});
      db = c.opset() >= 11 ? c.Op("Gemm", {a, g}, {GradAttr::Int("transA", 1)}) : c.Op("MatMul", {SwapLast(c, a), g});
    } else {
      db = c.Unbroadcast(c.Op("MatMul", {SwapLast(c, c.in(0)), c.grad(0)}), c.in(1));
    }
  }
  return {da, db};
}
// y = alpha*A'B' + beta*C with A' = transA ? A^T : A: each gradient is a Gemm of g and the other
// operand, with the transposes that make its shape that of the input.
V GemmGrad(G& c) {
  int64_t ta = c.Int("transA", 0), tb = c.Int("transB", 0);
  GradAttr alpha = GradAttr::Float("alpha", c.Float("alpha", 1.0f));
  auto gemm = [&](ir::Value* x, ir::Value* y, int64_t tx, int64_t ty) {
    return c.Op("Gemm", {x, y}, {alpha, GradAttr::Int("transA", tx), GradAttr::Int("transB", ty)});
  };
  ir::Value* g = c.grad(0);
  ir::Value *da = nullptr, *db = nullptr, *dc = nullptr;
  if (c.wants(0)) da = ta ? gemm(c.in(1), g, tb, 1) : gemm(g, c.in(1), 0, tb ? 0 : 1);
  if (c.wants(1)) db = tb ? gemm(g, c.in(0), 1, ta) : gemm(c.in(0), g, ta ? 0 : 1, 0);
  if (c.wants(2) && c.in(2)) {
    float beta = c.Float("beta", 1.0f);
    ir::Value* scaled = beta == 1.0f ? g : c.Op("Mul", {g, c.Scalar(beta, c.Dtype(g))});
    dc = c.Unbroadcast(scaled, c.in(2));
  }
  return {da, db, dc};
}
// Transpose(perm): dx = Transpose(g, inverse perm) (TransposeOf: without what cancels)
V TransposeGrad(G& c) {
  size_t r = c.Dims(c.in(0)).size();
  std::vector<int64_t> perm = c.Ints("perm");
  if (perm.empty())
    for (size_t i = 0; i < r; ++i) perm.push_back(int64_t(r - 1 - i));
  std::vector<int64_t> inverse(r);
  for (size_t i = 0; i < r; ++i) inverse[size_t(perm[i])] = int64_t(i);
  return {TransposeOf(c, c.grad(0), inverse)};
}
// Reshape, Flatten, Squeeze, Unsqueeze: dx = g reshaped to x's shape
V ReshapeGrad(G& c) { return {c.Op("Reshape", {c.grad(0), c.Int64s(c.Dims(c.in(0)))})}; }
// ReduceSum: dx = g expanded over the reduced axes
V ReduceSumGrad(G& c) { return {ExpandReduced(c, c.grad(0), ReduceAxes(c))}; }
// ReduceMean: dx = g/n expanded over the reduced axes
V ReduceMeanGrad(G& c) {
  std::vector<int64_t> axes = ReduceAxes(c), in = c.Dims(c.in(0));
  double n = 1;
  for (int64_t a : axes) n *= double(in[size_t(a)]);
  ir::Value* g = c.Op("Div", {c.grad(0), c.Scalar(n, c.Dtype(c.grad(0)))});
  return {ExpandReduced(c, g, axes)};
}
// y = softmax(x): dx = y*(g - sum(g*y, axis))
V SoftmaxGrad(G& c) {
  ir::Value* y = c.out(0);
  ir::Value* s = c.SumAxes(c.Op("Mul", {c.grad(0), y}), {SoftmaxAxis(c)}, true);
  return {c.Op("Mul", {y, c.Op("Sub", {c.grad(0), s})})};
}
// y = logsoftmax(x): dx = g - exp(y)*sum(g, axis)
V LogSoftmaxGrad(G& c) {
  ir::Value* s = c.SumAxes(c.grad(0), {SoftmaxAxis(c)}, true);
  return {c.Op("Sub", {c.grad(0), c.Op("Mul", {c.Op("Exp", {c.out(0)}), s})})};
}
// Cast: dx = g cast back to x's dtype (float inputs only)
V CastGrad(G& c) {
  if (!ir::IsFloat(c.Dtype(c.in(0)))) return {nullptr};
  return {c.Op("Cast", {c.grad(0)}, {GradAttr::Int("to", int64_t(ir::DTypeToOnnx(c.Dtype(c.in(0)))))})};
}
// Where(cond, a, b): da = g where cond, db = g where not cond
V WhereGrad(G& c) {
  ir::Value* zero = c.Scalar(0.0, c.Dtype(c.grad(0)));
  return {nullptr, c.wants(1) ? c.Unbroadcast(c.Op("Where", {c.in(0), c.grad(0), zero}), c.in(1)) : nullptr,
          c.wants(2) ? c.Unbroadcast(c.Op("Where", {c.in(0), zero, c.grad(0)}), c.in(2)) : nullptr};
}
// Concat(axis): each input's slice of g
V ConcatGrad(G& c) {
  size_t r = c.Dims(c.out(0)).size();
  int64_t axis = c.Int("axis", 0);
  if (axis < 0) axis += int64_t(r);
  V out;
  int64_t start = 0;
  for (size_t i = 0; i < c.node().inputs().size(); ++i) {
    int64_t len = c.Dims(c.in(i))[size_t(axis)];
    out.push_back(c.wants(i) ? c.Op("Slice", {c.grad(0), c.Int64s({start}), c.Int64s({start + len}), c.Int64s({axis})}) : nullptr);
    start += len;
  }
  return out;
}

// SoftmaxCrossEntropyLoss(scores [N, C, d...], labels [N, d...], weights [C]?): with p = softmax
// over axis 1, w_i the weight of sample i's class (1 without weights) times 0 where the label is
// ignore_index: d scores = (p - onehot(label)) * w_i * g_i, divided by sum(w) for the mean.
// A gradient of the optional log-probability output adds g_lp - p * sum(g_lp, axis 1).
V SoftmaxCrossEntropyGrad(G& c) {
  ir::Value* scores = c.in(0);
  ir::DType t = c.Dtype(scores);
  std::vector<int64_t> sd = c.Dims(scores);
  ir::Value* labels = c.Dtype(c.in(1)) == ir::DType::kI64 ? c.in(1) : c.Op("Cast", {c.in(1)}, {GradAttr::Int("to", 7)});
  ir::Value* p = c.Op("Softmax", {scores}, {GradAttr::Int("axis", 1)});
  ir::Value* sample = nullptr;  // w_i, or nullptr for all ones
  ir::Value* safe_labels = labels;
  if (c.node().FindAttribute("ignore_index")) {
    ir::Value* keep = c.Op("Not", {c.Op("Equal", {labels, c.Int64s({c.Int("ignore_index", -100)})})});
    safe_labels = c.Op("Where", {keep, labels, c.Int64s({0})});
    sample = c.Op("Cast", {keep}, {GradAttr::Int("to", int64_t(ir::DTypeToOnnx(t)))});
  }
  if (c.in(2)) {
    ir::Value* w = c.Op("Gather", {c.in(2), safe_labels}, {GradAttr::Int("axis", 0)});
    sample = sample ? c.Op("Mul", {sample, w}) : w;
  }
  std::vector<int64_t> ld = c.Dims(labels);
  if (!sample) {
    std::vector<double> ones(size_t(std::accumulate(ld.begin(), ld.end(), int64_t(1), std::multiplies<int64_t>())), 1.0);
    sample = c.Op("Reshape", {c.Floats(ones, t), c.Int64s(ld)});
  }
  V out(c.node().inputs().size(), nullptr);
  ir::Value* g = c.grad(0);
  std::string reduction;
  if (const ir::Attribute* a = c.node().FindAttribute("reduction")) reduction = a->s;
  if (reduction.empty()) reduction = "mean";
  ir::Value* coeff = c.Op("Mul", {sample, g});
  if (reduction == "mean") coeff = c.Op("Div", {coeff, c.Op("ReduceSum", {sample}, {GradAttr::Int("keepdims", 0)})});
  std::vector<int64_t> kept = ld;
  kept.insert(kept.begin() + 1, 1);
  ir::Value* onehot = c.Op("OneHot", {safe_labels, c.Int64s({sd[1]}), c.Floats({0.0, 1.0}, t)}, {GradAttr::Int("axis", 1)});
  ir::Value* ds = c.Op("Mul", {c.Op("Sub", {p, onehot}), c.Op("Reshape", {coeff, c.Int64s(kept)})});
  if (c.grad(1)) {
    ir::Value* s = c.SumAxes(c.grad(1), {1}, true);
    ds = c.Op("Add", {ds, c.Op("Sub", {c.grad(1), c.Op("Mul", {p, s})})});
  }
  out[0] = ds;
  return out;
}

// Conv (G groups of Cg input and Mg output channels) written as convolutions, as cuDNN's
// backward passes compute them:
//   dX = ConvTranspose(g, W, group G) with the same strides, pads and dilations, output_padding
//        making the input's size back;
//   dW = ConvFilterGrad(X, g) with the forward's geometry: dW[m, c, k] = sum over n and output
//        positions o of g[n, m, o] * X[n, group(m) * Cg + c, o * stride + k * dilation - pad]
//        (one gradient kernel: backends run it as cuDNN's and oneDNN's backward-weights pass);
//   dB = g summed over the batch and spatial axes.
V ConvGrad(G& c) {
  std::vector<int64_t> xd = c.Dims(c.in(0)), wd = c.Dims(c.in(1)), gd = c.Dims(c.grad(0));
  size_t sp = xd.size() - 2;
  int64_t group = c.Int("group", 1);
  std::vector<int64_t> strides = c.Ints("strides", std::vector<int64_t>(sp, 1)), dil = c.Ints("dilations", std::vector<int64_t>(sp, 1));
  std::vector<int64_t> pads = c.Ints("pads", std::vector<int64_t>(2 * sp, 0));
  ir::Value* g = c.grad(0);
  V out(c.node().inputs().size(), nullptr);
  if (c.wants(0)) {
    std::vector<int64_t> extra(sp);
    for (size_t i = 0; i < sp; ++i)
      extra[i] = xd[2 + i] - ((gd[2 + i] - 1) * strides[i] - pads[i] - pads[sp + i] + dil[i] * (wd[2 + i] - 1) + 1);
    out[0] = c.Op("ConvTranspose", {g, c.in(1)},
                  {GradAttr::Ints("strides", strides), GradAttr::Ints("pads", pads), GradAttr::Ints("dilations", dil),
                   GradAttr::Ints("output_padding", extra), GradAttr::Int("group", group)});
  }
  if (c.wants(1)) {
    std::vector<int64_t> kernel(wd.begin() + 2, wd.end());
    out[1] = c.Op("ConvFilterGrad", {c.in(0), g},
                  {GradAttr::Ints("kernel_shape", kernel), GradAttr::Ints("strides", strides), GradAttr::Ints("pads", pads),
                   GradAttr::Ints("dilations", dil), GradAttr::Int("group", group)});
  }
  if (c.wants(2) && c.in(2)) {
    std::vector<int64_t> axes = {0};
    for (size_t i = 0; i < sp; ++i) axes.push_back(int64_t(2 + i));
    out[2] = c.SumAxes(g, axes, false);
  }
  return out;
}

const char* RefuseConv(const ir::Node& n) {
  const ir::Attribute* pad = n.FindAttribute("auto_pad");
  if (pad && pad->s != "NOTSET" && !pad->s.empty()) return "auto_pad has no gradient rule yet (give explicit pads)";
  return nullptr;
}

// ReduceMax: the gradient is split evenly among the elements equal to the maximum (torch.amax's
// convention): dx = g * (x == y) / count(x == y), g and y expanded over the reduced axes.
V ReduceMaxGrad(G& c) {
  std::vector<int64_t> axes = ReduceAxes(c);
  ir::DType t = c.Dtype(c.grad(0));
  ir::Value* hit = c.Op("Cast", {c.Op("Equal", {c.in(0), ExpandReduced(c, c.out(0), axes)})}, {GradAttr::Int("to", int64_t(ir::DTypeToOnnx(t)))});
  ir::Value* share = c.Op("Div", {hit, c.SumAxes(hit, axes, true)});
  return {c.Op("Mul", {ExpandReduced(c, c.grad(0), axes), share})};
}

// BatchNormalizationTraining (batch statistics): dX, dscale and dB from one gradient kernel that
// reads the forward's batch mean and variance (see runtime/cpu/kernels/training.cc for the algebra).
V BatchNormTrainingGrad(G& c) {
  V g = c.OpN("BatchNormalizationTrainingGrad", {c.grad(0), c.in(0), c.in(1), c.out(1), c.out(2)},
              {GradAttr::Float("epsilon", c.Float("epsilon", 1e-5f))}, 3);
  return {c.wants(0) ? g[0] : nullptr, c.wants(1) ? g[1] : nullptr, c.wants(2) ? g[2] : nullptr};
}

const char* RefuseBatchNormTraining(const ir::Node& n) {
  bool stats = n.outputs().size() >= 3 && n.outputs()[1] && n.outputs()[2];
  return stats ? nullptr : "its batch mean and variance outputs are needed by the gradient";
}

// DropoutTraining: dx = g * mask / (1 - ratio), with the forward's mask
V DropoutTrainingGrad(G& c) {
  ir::DType t = c.Dtype(c.grad(0));
  ir::Value* mask = c.Op("Cast", {c.out(1)}, {GradAttr::Int("to", int64_t(ir::DTypeToOnnx(t)))});
  return {c.Op("Mul", {c.Op("Mul", {c.grad(0), mask}), c.Scalar(1.0 / (1.0 - double(c.Float("ratio", 0.0f))), t)}), nullptr, nullptr};
}

const char* RefuseDropoutTraining(const ir::Node& n) {
  return n.outputs().size() >= 2 && n.outputs()[1] ? nullptr : "its mask output is needed by the gradient";
}

const std::vector<GradRule>& Rules() {
  // Sorted by op type; opset ranges where the operator's form changed (axes as an input).
  static const std::vector<GradRule> rules = {
      {.op_type = "Abs", .fn = AbsGrad},
      {.op_type = "Add", .fn = AddGrad},
      {.op_type = "AveragePool", .fn = AveragePoolGrad, .refuse = RefusePool},
      {.op_type = "BatchNormalizationTraining", .fn = BatchNormTrainingGrad, .refuse = RefuseBatchNormTraining},
      {.op_type = "Cast", .fn = CastGrad},
      {.op_type = "Clip", .min_opset = 6, .max_opset = 10, .fn = ClipGrad},
      {.op_type = "Clip", .min_opset = 11, .fn = ClipGrad, .non_differentiable = {1, 2}},
      {.op_type = "Concat", .min_opset = 4, .fn = ConcatGrad},
      {.op_type = "Conv", .fn = ConvGrad, .refuse = RefuseConv},
      {.op_type = "Div", .fn = DivGrad},
      {.op_type = "DropoutTraining", .fn = DropoutTrainingGrad, .non_differentiable = {1, 2}, .refuse = RefuseDropoutTraining},
      {.op_type = "Erf", .fn = ErfGrad},
      {.op_type = "Exp", .fn = ExpGrad},
      {.op_type = "Expand", .min_opset = 8, .fn = ExpandGrad, .non_differentiable = {1}},
      {.op_type = "Flatten", .fn = ReshapeGrad},
      {.op_type = "Gather", .fn = GatherGrad, .non_differentiable = {1}},
      {.op_type = "Gelu", .min_opset = 20, .fn = GeluGrad},
      {.op_type = "Gemm", .fn = GemmGrad},
      {.op_type = "GlobalAveragePool", .fn = GlobalAveragePoolGrad},
      {.op_type = "GlobalMaxPool", .fn = GlobalMaxPoolGrad},
      {.op_type = "HardSigmoid", .min_opset = 6, .fn = HardSigmoidGrad},
      {.op_type = "HardSwish", .min_opset = 14, .fn = HardSwishGrad},
      {.op_type = "Identity", .fn = IdentityGrad},
      {.op_type = "LayerNormalization", .min_opset = 17, .fn = LayerNormGrad, .refuse = RefuseLayerNorm},
      {.op_type = "LeakyRelu", .min_opset = 6, .fn = LeakyReluGrad},
      {.op_type = "Log", .fn = LogGrad},
      {.op_type = "LogSoftmax", .min_opset = 13, .fn = LogSoftmaxGrad},
      {.op_type = "MatMul", .fn = MatMulGrad},
      {.op_type = "Max", .min_opset = 8, .fn = MaxGrad, .refuse = RefuseMaxMin},
      {.op_type = "MaxPool", .min_opset = 8, .fn = MaxPoolGrad, .refuse = RefusePool},
      {.op_type = "Min", .min_opset = 8, .fn = MinGrad, .refuse = RefuseMaxMin},
      {.op_type = "Mul", .fn = MulGrad},
      {.op_type = "Neg", .fn = NegGrad},
      {.op_type = "Pad", .fn = PadGrad, .non_differentiable = {1, 2, 3}, .refuse = RefusePad},
      {.op_type = "Pow", .fn = PowGrad},
      {.op_type = "Reciprocal", .fn = ReciprocalGrad},
      {.op_type = "ReduceMax", .fn = ReduceMaxGrad, .non_differentiable = {1}},
      {.op_type = "ReduceMean", .fn = ReduceMeanGrad, .non_differentiable = {1}},
      {.op_type = "ReduceSum", .fn = ReduceSumGrad, .non_differentiable = {1}},
      {.op_type = "Relu", .fn = ReluGrad},
      {.op_type = "Reshape", .min_opset = 5, .fn = ReshapeGrad, .non_differentiable = {1}},
      {.op_type = "Sigmoid", .fn = SigmoidGrad},
      {.op_type = "Slice", .fn = SliceGrad, .non_differentiable = {1, 2, 3, 4}},
      {.op_type = "Softmax", .min_opset = 13, .fn = SoftmaxGrad},
      {.op_type = "SoftmaxCrossEntropyLoss", .min_opset = 13, .fn = SoftmaxCrossEntropyGrad, .non_differentiable = {1, 2}},
      {.op_type = "Split", .fn = SplitGrad, .non_differentiable = {1}},
      {.op_type = "Sqrt", .fn = SqrtGrad},
      {.op_type = "Squeeze", .fn = ReshapeGrad, .non_differentiable = {1}},
      {.op_type = "Sub", .fn = SubGrad},
      {.op_type = "Tanh", .fn = TanhGrad},
      {.op_type = "Transpose", .fn = TransposeGrad},
      {.op_type = "Trilu", .min_opset = 14, .fn = TriluGrad, .non_differentiable = {1}},
      {.op_type = "Unsqueeze", .fn = ReshapeGrad, .non_differentiable = {1}},
      {.op_type = "Where", .fn = WhereGrad, .non_differentiable = {0}},
  };
  return rules;
}

}  // namespace

const GradRule* FindGradRule(const std::string& op_type, int64_t opset) {
  for (const GradRule& r : Rules())
    if (r.op_type == op_type && opset >= r.min_opset && opset <= r.max_opset) return &r;
  return nullptr;
}

std::vector<std::string> GradOps() {
  std::vector<std::string> ops;
  for (const GradRule& r : Rules())
    if (ops.empty() || ops.back() != r.op_type) ops.push_back(r.op_type);
  return ops;
}

}  // namespace precis::ops
