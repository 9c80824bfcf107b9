// If, Loop and Scan: body input types, the operators' shape inference and registration (see
// control_flow.h). The runtime kernels are runtime/cpu/kernels/control_flow.cc.
#include "compiler/ops/control_flow.h"

#include <algorithm>
#include <cstring>

#include "compiler/ir/text.h"
#include "compiler/ops/op_registry.h"
#include "compiler/ops/shape_values.h"

namespace precis::ops {
namespace {

const ir::Graph* Body(const ir::Node& n, const char* name) {
  const ir::Attribute* a = n.FindAttribute(name);
  return a && a->kind == ir::Attribute::Kind::kGraph && a->graphs.size() == 1 ? a->graphs[0].get() : nullptr;
}

bool SameType(const ir::Type& a, const ir::Type& b) {
  return a.is_tensor() && b.is_tensor() && a.dtype() == b.dtype() && a.shape().has_rank() && b.shape().has_rank() &&
         a.shape().dims() == b.shape().dims();
}

const ir::Type& TypeOf(const ir::Value* v) {
  static const ir::Type kUnknown;
  return v ? v->type() : kUnknown;
}

// A bool scalar constant that is true.
bool ConstantTrue(const ir::Value* v) {
  if (!v || !v->is_constant() || !v->data() || !v->data()->has_data() || v->data()->NumElements() != 1) return false;
  return v->data()->buffer().data()[0] != 0;
}

bool ConditionStaysTrue(const ir::Node& loop);

std::vector<ir::Dim> WithoutAxis(std::vector<ir::Dim> dims, int64_t axis) {
  dims.erase(dims.begin() + axis);
  return dims;
}

// Scan's axis attributes with defaults (0) and negative axes resolved against `ranks`.
StatusOr<std::vector<int64_t>> ScanAxes(const InferContext& ctx, const char* name, const std::vector<int64_t>& ranks) {
  std::vector<int64_t> axes = ctx.Ints(name).value_or(std::vector<int64_t>(ranks.size(), 0));
  if (axes.size() != ranks.size())
    return ctx.Error(std::string(name) + " has " + std::to_string(axes.size()) + " values for " + std::to_string(ranks.size()) + " tensors");
  for (size_t i = 0; i < axes.size(); ++i) {
    if (axes[i] < -ranks[i] || axes[i] >= ranks[i])
      return ctx.Error(std::string(name) + "[" + std::to_string(i) + "] = " + std::to_string(axes[i]) + " is out of range for rank " +
                       std::to_string(ranks[i]));
    if (axes[i] < 0) axes[i] += ranks[i];
  }
  return axes;
}

Status InferIf(InferContext& ctx) {
  const ir::Graph* then_g = Body(ctx.node(), "then_branch");
  const ir::Graph* else_g = Body(ctx.node(), "else_branch");
  if (!then_g || !else_g) return ctx.Error("needs then_branch and else_branch graphs");
  if (then_g->outputs().size() != ctx.num_outputs() || else_g->outputs().size() != ctx.num_outputs())
    return ctx.Error("has " + std::to_string(ctx.num_outputs()) + " outputs, its branches " + std::to_string(then_g->outputs().size()) +
                     " and " + std::to_string(else_g->outputs().size()));
  if (!ctx.input_type(0).is_tensor() || ctx.input_dtype(0) != ir::DType::kBool)
    return ctx.Error("the condition must be a bool tensor (it is " + ir::PrintType(ctx.input_type(0)) + ")");
  for (size_t i = 0; i < ctx.num_outputs(); ++i) {
    const ir::Type& a = TypeOf(then_g->outputs()[i]);
    const ir::Type& b = TypeOf(else_g->outputs()[i]);
    if (!SameType(a, b) || !a.shape().is_static())
      return ctx.Unsupported("output " + std::to_string(i) + " is " + ir::PrintType(a) + " from then_branch and " + ir::PrintType(b) +
                             " from else_branch; Precis plans need one static type for both (outputs whose shape depends on the "
                             "branch taken need run-time shapes, which plans do not have yet)");
    ctx.SetOutput(i, a);
  }
  return Status::Ok();
}

// The body's condition output is its condition input (through Identity nodes) or a true
// constant: the loop runs while the initial condition holds, up to M iterations.
bool ConditionPassedThrough(const ir::Node& loop) {
  const ir::Graph* body = Body(loop, "body");
  if (!body || body->outputs().empty() || body->inputs().size() < 2) return false;
  const ir::Value* cond_out = body->outputs()[0];
  while (cond_out && cond_out->producer() && cond_out->producer()->op_type() == "Identity" && cond_out->producer()->domain().empty() &&
         !cond_out->producer()->inputs().empty())
    cond_out = cond_out->producer()->inputs()[0];
  return cond_out == body->inputs()[1] || ConstantTrue(cond_out);
}

// The iteration count of a loop whose trip count M and initial condition are run-time values
// (value symbols, docs/dynamic-shapes.md) and whose body passes the condition through:
// cond * max(M, 0). nullopt when the count is known only once the loop ran.
std::optional<ir::DimExpr> RunTimeTripCount(const InferContext& ctx) {
  if (!ctx.has_input(0) || !ConditionPassedThrough(ctx.node())) return std::nullopt;
  auto m = ctx.ShapeValues(0);
  if (!m.ok() || m->size() != 1) return std::nullopt;
  auto count = ir::DimExpr::Max((*m)[0], ir::DimExpr());
  if (!count) return std::nullopt;
  if (ctx.has_input(1)) {
    auto c = ctx.ShapeValues(1);
    if (!c.ok() || c->size() != 1 || ctx.input_dtype(1) != ir::DType::kBool) return std::nullopt;
    count = (*c)[0].Mul(*count);  // a bool value is 0 or 1
  }
  return count;
}

// Whether factor `f` of a monomial (a symbol or an atom) reads `symbol`.
bool Reads(const std::string& f, const std::string& symbol) { return f == symbol || (f.find('(') != std::string::npos && ir::DimExpr::Symbol(f).Symbols().count(symbol)); }

// Whether `e` never decreases as `symbol` grows, the other symbols fixed (and never is negative
// where it reads it): each term that reads it has a positive coefficient and factors that are
// >= 0 and non-decreasing in it (symbols, floor atoms and min/max of such).
bool NonDecreasingIn(const ir::DimExpr& e, const std::string& symbol) {
  for (const auto& [monomial, coeff] : e.terms()) {
    bool reads = false;
    for (const std::string& f : monomial) reads |= Reads(f, symbol);
    if (!reads) continue;
    if (coeff < 0) return false;
    for (const std::string& f : monomial) {
      if (f == symbol) continue;
      if (!ir::DimExpr::Symbol(f).KnownNonNegative()) return false;
      if (!Reads(f, symbol)) continue;
      auto atom = ir::ParseDimAtom(f);
      if (!atom) return false;
      bool ok = atom->kind == ir::DimAtom::Kind::kFloor ? NonDecreasingIn(atom->p, symbol)
                : atom->kind == ir::DimAtom::Kind::kMin || atom->kind == ir::DimAtom::Kind::kMax
                    ? NonDecreasingIn(atom->p, symbol) && NonDecreasingIn(atom->q, symbol)
                    : false;
      if (!ok) return false;
    }
  }
  return true;
}

// `e` with `symbol` replaced by `by` (atoms rebuilt around it); nullopt on overflow.
std::optional<ir::DimExpr> Substitute(const ir::DimExpr& e, const std::string& symbol, const ir::DimExpr& by) {
  std::optional<ir::DimExpr> out = ir::DimExpr();
  for (const auto& [monomial, coeff] : e.terms()) {
    std::optional<ir::DimExpr> term = ir::DimExpr::Constant(coeff);
    for (const std::string& f : monomial) {
      std::optional<ir::DimExpr> factor;
      if (f == symbol) {
        factor = by;
      } else if (!Reads(f, symbol)) {
        factor = ir::DimExpr::Symbol(f);
      } else if (auto atom = ir::ParseDimAtom(f)) {
        auto p = Substitute(atom->p, symbol, by);
        auto q = Substitute(atom->q, symbol, by);
        if (!p || !q) return std::nullopt;
        switch (atom->kind) {
          case ir::DimAtom::Kind::kFloor: factor = p->FloorDiv(atom->k); break;
          case ir::DimAtom::Kind::kEq: factor = ir::DimExpr::Eq(*p, ir::DimExpr()); break;
          case ir::DimAtom::Kind::kNeg: factor = ir::DimExpr::Lt(*p, ir::DimExpr()); break;
          case ir::DimAtom::Kind::kDiv: factor = p->FloorDivBy(*q); break;
          case ir::DimAtom::Kind::kMin: factor = ir::DimExpr::Min(*p, *q); break;
          case ir::DimAtom::Kind::kMax: factor = ir::DimExpr::Max(*p, *q); break;
        }
      }
      if (!factor || !(term = term->Mul(*factor))) return std::nullopt;
    }
    if (!(out = out->Add(*term))) return std::nullopt;
  }
  return out;
}

// A Loop body's iteration number is known to shape inference as the symbol IterationSymbol
// (x[i:i+1] has one row whatever i is). A body value whose dims follow it (x[0:i+1]) changes
// shape from one iteration to the next: the runtime binds the symbol per iteration and plans the
// body's memory for the last one, so such dims must never decrease as it grows, and the loop
// needs a bound on its iterations (IterationBound).
Status CheckIterationShapes(const InferContext& ctx, const ir::Graph& body) {
  const std::string symbol = IterationSymbol(ctx.node());
  std::vector<const ir::Graph*> graphs{&body};
  bool bounded = IterationBound(ctx.node()).has_value();
  for (size_t g = 0; g < graphs.size(); ++g)
    for (const auto& node : graphs[g]->nodes()) {
      for (const ir::Attribute& a : node->attributes())
        if (a.kind == ir::Attribute::Kind::kGraph)
          for (const auto& sub : a.graphs) graphs.push_back(sub.get());
      for (const ir::Value* v : node->outputs()) {
        if (!v || !v->type().is_tensor() || !v->type().shape().has_rank()) continue;
        for (const ir::Dim& d : v->type().shape().dims()) {
          auto e = ir::DimExpr::FromDim(d);
          if (!e || !e->Symbols().count(symbol)) continue;
          if (!bounded)
            return ctx.Unsupported("its body's value '" + v->name() + "' has a shape that follows the iteration number (" + ir::PrintType(v->type()) +
                                   ") and the loop has no trip count M to bound it (the runtime plans the body's memory for the last iteration)");
          if (!NonDecreasingIn(*e, symbol))
            return ctx.Unsupported("its body's value '" + v->name() + "' has a shape that follows the iteration number (" + ir::PrintType(v->type()) +
                                   ") and may shrink as it grows; Precis plans the body's memory for the last iteration, so such shapes must "
                                   "grow or stay the same from one iteration to the next");
        }
      }
    }
  return Status::Ok();
}

Status InferLoop(InferContext& ctx) {
  const ir::Graph* body = Body(ctx.node(), "body");
  if (!body) return ctx.Error("needs a body graph");
  if (ctx.num_inputs() < 2) return ctx.Error("needs the inputs M and cond (either may be empty)");
  size_t n = ctx.num_inputs() - 2;
  if (body->inputs().size() != n + 2) return ctx.Error("has " + std::to_string(n) + " loop-carried inputs; its body must take " + std::to_string(n + 2) + " inputs");
  // Scan outputs that stack a list the body appends to (passes/sequence_loops.cc) may come with
  // an output of each element's dims (attribute scan_dims_outputs: per scan output, that Loop
  // output's index or -1); their elements may then differ in shape, padded to the last one's.
  size_t scans = body->outputs().size() < n + 1 ? 0 : body->outputs().size() - 1 - n;
  std::vector<int64_t> dims_outputs = ctx.Ints("scan_dims_outputs").value_or(std::vector<int64_t>(scans, -1));
  size_t companions = size_t(std::count_if(dims_outputs.begin(), dims_outputs.end(), [](int64_t o) { return o >= 0; }));
  if (body->outputs().size() < n + 1 || ctx.num_outputs() != body->outputs().size() - 1 + companions)
    return ctx.Error("body outputs (" + std::to_string(body->outputs().size()) + ") must be the condition, the " + std::to_string(n) +
                     " loop-carried values and the scan outputs (" + std::to_string(ctx.num_outputs()) + " Loop outputs)");
  if (dims_outputs.size() != scans) return ctx.Error("scan_dims_outputs needs one entry per scan output");
  for (int64_t o : dims_outputs)
    if (o >= 0 && (size_t(o) < n + scans || size_t(o) >= ctx.num_outputs())) return ctx.Error("scan_dims_outputs names a Loop output that is not after the scan outputs");
  if (!TypeOf(body->outputs()[0]).is_tensor() || TypeOf(body->outputs()[0]).dtype() != ir::DType::kBool)
    return ctx.Error("the body's first output (the condition) must be bool");
  if (!ctx.has_input(0) && ConditionStaysTrue(ctx.node()))
    return ctx.Error("never ends: it has no trip count M and its condition stays true (the body passes it through unchanged)");
  for (size_t k = 0; k < n; ++k) {
    const ir::Type& in = ctx.input_type(k + 2);
    const ir::Type& out = TypeOf(body->outputs()[k + 1]);
    if (!SameType(in, out))
      return ctx.Unsupported("loop-carried value " + std::to_string(k) + " ('" + (ctx.has_input(k + 2) ? ctx.node().inputs()[k + 2]->name() : "?") +
                             "') is " + ir::PrintType(in) + " before the loop and " + ir::PrintType(out) +
                             " after an iteration; values whose shape changes across iterations need run-time shapes, which Precis plans do "
                             "not have yet");
    ctx.SetOutput(k, in);
  }
  PRECIS_RETURN_IF_ERROR(CheckIterationShapes(ctx, *body));
  const std::string iteration = IterationSymbol(ctx.node());
  int64_t trips = StaticTripCount(ctx.node());
  std::optional<ir::DimExpr> length;
  if (trips >= 0) length = ir::DimExpr::Constant(trips);
  for (size_t k = n + 1; k < body->outputs().size(); ++k) {
    const ir::Type& slice = TypeOf(body->outputs()[k]);
    if (!slice.is_tensor() || !slice.shape().has_rank()) return ctx.Error("scan output " + std::to_string(k - n - 1) + " has no known type");
    if (!length) length = RunTimeTripCount(ctx);
    std::vector<ir::Dim> dims{length ? length->ToDim() : ir::Dim()};
    if (!length) {
      // The body computes its condition: how many iterations run is known once the loop ran. A
      // loop of the main graph with a trip count M gives its scan outputs a data dim (bound M).
      const ir::Graph* owner = ctx.node().owner();
      auto m = ctx.has_input(0) ? ctx.ShapeValues(0) : StatusOr<std::vector<ir::DimExpr>>(ctx.Error("no trip count"));
      if (!owner || owner->parent_node() || !m.ok() || m->size() != 1)
        return ctx.Unsupported("its scan outputs have a length known only after the loop ran (its body computes the condition) and " +
                               std::string(owner && owner->parent_node() ? "it runs inside another body"
                                                                         : "it has no trip count M (a constant or an input value) to bound them"));
      if (m->front().is_constant() && m->front().constant() > (int64_t(1) << 30))
        return ctx.Unsupported("its scan outputs have a length known only after the loop ran (its body computes the condition), bounded "
                               "only by its trip count M = " + std::to_string(m->front().constant()) +
                               "; Precis plans the memory for the bound, so M must be a real limit (at most 2^30)");
      dims[0] = DataDim(ctx.node());
    }
    int64_t companion = dims_outputs[k - n - 1];
    for (const ir::Dim& d : slice.shape().dims()) {
      auto e = ir::DimExpr::FromDim(d);
      if (!e || !e->Symbols().count(iteration)) {
        dims.push_back(d);
        continue;
      }
      // The element of the last iteration is the largest (CheckIterationShapes): the stack is
      // padded to it, and the companion output holds each element's dims.
      if (companion < 0)
        return ctx.Unsupported("scan output " + std::to_string(k - n - 1) + " ('" + body->outputs()[k]->name() + "') has a shape that follows the iteration number (" +
                               ir::PrintType(slice) + "); ONNX stacks scan outputs of one shape");
      auto last = Substitute(*e, iteration, *IterationBound(ctx.node()));
      if (!last) return ctx.Unsupported("scan output " + std::to_string(k - n - 1) + ": the dims of its last element overflow");
      dims.push_back(last->ToDim());
    }
    ctx.SetOutput(k - 1, slice.dtype(), dims);
    if (companion >= 0) ctx.SetOutput(size_t(companion), ir::DType::kI64, {dims[0], ir::Dim::Static(slice.shape().rank())});
  }
  return Status::Ok();
}

Status InferScan(InferContext& ctx) {
  const ir::Graph* body = Body(ctx.node(), "body");
  if (!body) return ctx.Error("needs a body graph");
  int64_t m = ctx.Int("num_scan_inputs", -1);
  if (m < 1 || size_t(m) > ctx.num_inputs()) return ctx.Error("num_scan_inputs must be between 1 and the number of inputs");
  size_t n = ctx.num_inputs() - size_t(m);
  size_t k = ctx.num_outputs() < n ? 0 : ctx.num_outputs() - n;
  if (ctx.num_outputs() < n || body->inputs().size() != ctx.num_inputs() || body->outputs().size() != ctx.num_outputs())
    return ctx.Error("the body must take the " + std::to_string(n) + " state values and " + std::to_string(m) +
                     " scan slices and give the state values and the scan output slices");
  std::vector<int64_t> in_ranks, out_ranks;
  for (size_t j = 0; j < size_t(m); ++j) {
    PRECIS_ASSIGN_OR_RETURN(auto dims, ctx.InputDims(n + j));
    if (dims.empty()) return ctx.Error("scan input " + std::to_string(j) + " is a scalar");
    in_ranks.push_back(int64_t(dims.size()));
  }
  for (size_t j = 0; j < k; ++j) {
    const ir::Type& t = TypeOf(body->outputs()[n + j]);
    if (!t.is_tensor() || !t.shape().has_rank()) return ctx.Error("scan output " + std::to_string(j) + " has no known type");
    out_ranks.push_back(t.shape().rank() + 1);
  }
  PRECIS_ASSIGN_OR_RETURN(auto in_axes, ScanAxes(ctx, "scan_input_axes", in_ranks));
  PRECIS_ASSIGN_OR_RETURN(auto out_axes, ScanAxes(ctx, "scan_output_axes", out_ranks));
  ir::Dim length = ctx.input_type(n).shape().dims()[size_t(in_axes[0])];
  for (size_t j = 1; j < size_t(m); ++j) {
    const ir::Dim& d = ctx.input_type(n + j).shape().dims()[size_t(in_axes[j])];
    if (d.is_static() && length.is_static() && d.value() != length.value())
      return ctx.Error("scan inputs have different lengths (" + std::to_string(length.value()) + " and " + std::to_string(d.value()) + ")");
  }
  for (size_t s = 0; s < n; ++s) {
    const ir::Type& out = TypeOf(body->outputs()[s]);
    if (!SameType(ctx.input_type(s), out))
      return ctx.Unsupported("state value " + std::to_string(s) + " is " + ir::PrintType(ctx.input_type(s)) + " initially and " + ir::PrintType(out) +
                             " after an iteration; Precis plans need one static type");
    ctx.SetOutput(s, out);
  }
  for (size_t j = 0; j < k; ++j) {
    std::vector<ir::Dim> dims = TypeOf(body->outputs()[n + j]).shape().dims();
    dims.insert(dims.begin() + out_axes[j], length);
    ctx.SetOutput(n + j, TypeOf(body->outputs()[n + j]).dtype(), dims);
  }
  return Status::Ok();
}

// A Loop whose condition starts true (absent or a true constant) and that its body passes
// through unchanged (its input, through Identity nodes, or a true constant).
bool ConditionStaysTrue(const ir::Node& loop) {
  const auto& in = loop.inputs();
  if (in.size() > 1 && in[1] && !ConstantTrue(in[1])) return false;
  return ConditionPassedThrough(loop);
}

}  // namespace

std::vector<std::pair<std::string, ir::Graph*>> ControlFlowBodies(const ir::Node& node) {
  std::vector<std::pair<std::string, ir::Graph*>> out;
  if (!node.domain().empty() || (node.op_type() != "If" && node.op_type() != "Loop" && node.op_type() != "Scan")) return out;
  for (const ir::Attribute& a : node.attributes())
    if (a.kind == ir::Attribute::Kind::kGraph && a.graphs.size() == 1) out.emplace_back(a.name, a.graphs[0].get());
  return out;
}

StatusOr<std::vector<ir::Type>> BodyInputTypes(const ir::Node& node, const std::string& attr, int64_t opset) {
  InferContext ctx(node, opset);
  std::vector<ir::Type> types;
  const std::string& op = node.op_type();
  if (op == "If") return types;
  if (op == "Loop") {
    types.push_back(ir::Type::Tensor(ir::DType::kI64, ir::Shape(std::vector<ir::Dim>{})));
    types.push_back(ir::Type::Tensor(ir::DType::kBool, ir::Shape(std::vector<ir::Dim>{})));
    for (size_t k = 2; k < node.inputs().size(); ++k) {
      if (!ctx.has_input(k)) return ctx.Error("loop-carried input " + std::to_string(k - 2) + " is missing");
      types.push_back(ctx.input_type(k));
    }
    return types;
  }
  if (op == "Scan") {
    if (opset < 9) return ctx.Unsupported("Scan before opset 9 (with sequence_lens and a batch axis) is not supported");
    int64_t m = ctx.Int("num_scan_inputs", -1);
    if (m < 1 || size_t(m) > node.inputs().size()) return ctx.Error("num_scan_inputs must be between 1 and the number of inputs");
    size_t n = node.inputs().size() - size_t(m);
    std::vector<int64_t> ranks;
    for (size_t j = 0; j < size_t(m); ++j) {
      PRECIS_ASSIGN_OR_RETURN(auto dims, ctx.InputDims(n + j));
      if (dims.empty()) return ctx.Error("scan input " + std::to_string(j) + " is a scalar");
      ranks.push_back(int64_t(dims.size()));
    }
    PRECIS_ASSIGN_OR_RETURN(auto axes, ScanAxes(ctx, "scan_input_axes", ranks));
    for (size_t s = 0; s < n; ++s) {
      if (!ctx.has_input(s)) return ctx.Error("state input " + std::to_string(s) + " is missing");
      types.push_back(ctx.input_type(s));
    }
    for (size_t j = 0; j < size_t(m); ++j)
      types.push_back(ir::Type::Tensor(ctx.input_dtype(n + j), ir::Shape(WithoutAxis(ctx.input_type(n + j).shape().dims(), axes[j]))));
    return types;
  }
  return ctx.Error("'" + attr + "' is not the body of a control-flow operator");
}

std::optional<ir::DimExpr> IterationBound(const ir::Node& loop) {
  int64_t trips = StaticTripCount(loop);
  if (trips >= 0) return ir::DimExpr::Constant(std::max<int64_t>(trips - 1, 0));
  InferContext ctx(loop, 0);
  std::optional<ir::DimExpr> count = RunTimeTripCount(ctx);
  if (!count && ctx.has_input(0)) {
    // The body computes its condition: at most M iterations.
    auto m = ctx.ShapeValues(0);
    if (m.ok() && m->size() == 1) count = m->front();
  }
  if (!count) return std::nullopt;
  auto last = count->Sub(ir::DimExpr::Constant(1));
  return last ? ir::DimExpr::Max(*last, ir::DimExpr()) : std::nullopt;
}

std::string IterationSymbol(const ir::Node& loop) { return "iteration_of_" + ir::SymbolName(loop.name().empty() ? "loop" : loop.name()); }

int64_t StaticTripCount(const ir::Node& loop) {
  const auto& in = loop.inputs();
  if (in.empty() || !in[0] || !in[0]->is_constant() || !in[0]->data() || !in[0]->data()->has_data() || in[0]->data()->NumElements() != 1)
    return -1;
  if (!ConditionStaysTrue(loop)) return -1;
  const ir::Tensor& m = *in[0]->data();
  int64_t trips = 0;
  if (m.dtype() == ir::DType::kI64) std::memcpy(&trips, m.buffer().data(), 8);
  else return -1;
  return std::max<int64_t>(trips, 0);
}

void RegisterControlFlowOps(OpRegistry& r) {
  // {domain, op, min opset, max opset, infer, foldable, in-place input, kernel}
  r.Register({"", "If", 1, INT_MAX, InferIf, false, -1, "", PrecisionClass::kUntouched});
  r.Register({"", "Loop", 1, INT_MAX, InferLoop, false, -1, "", PrecisionClass::kUntouched});
  r.Register({"", "Scan", 9, INT_MAX, InferScan, false, -1, "", PrecisionClass::kUntouched});
}

}  // namespace precis::ops
