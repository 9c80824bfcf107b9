// FuseEpilogues (see fuse_epilogues.h): first MatMul + bias (+ activation) chains become Gemm,
// then remaining activations move into the product or convolution before them. Each rule
// collects its matches first (chains are disjoint: every intermediate has one use), then
// rewrites them.
#include "passes/fuse_epilogues.h"

#include <algorithm>
#include <cmath>
#include <optional>
#include <sstream>

#include "compiler/ir/precision_reason.h"
#include "passes/match.h"

namespace precis::passes {
namespace {

using ir::Node;
using ir::Value;
using match::AddEvidence;
using match::FreshName;
using match::Is;
using match::InV;
using match::Near;
using match::OnlyUser;
using match::Other;
using match::Producer;
using match::Scalar;
using match::ShapeConstant;
using match::StaticDims;
using match::FloatAttr;
using match::StringAttr;

bool IsGraphOutput(const ir::Graph& g, const Value* v) {
  return std::find(g.outputs().begin(), g.outputs().end(), v) != g.outputs().end();
}

using ir::IsFloat;


// A value only the next node of a chain reads: one use, not a graph output.
bool Private(const ir::Graph& g, const Value* v) {
  return v && v->kind() == Value::Kind::kNodeOutput && v->uses().size() == 1 && !IsGraphOutput(g, v);
}

// An activation that alone consumes `x` and writes a tensor of x's type.
struct Activation {
  std::string name;          // the "activation" attribute: Relu, Gelu or GeluTanh
  std::vector<Node*> nodes;  // in graph order
  Value* out = nullptr;
};

std::optional<Activation> ActivationOf(const ir::Graph& g, Value* x) {
  if (!x || IsGraphOutput(g, x) || !x->type().is_tensor() || !IsFloat(x->type().dtype())) return std::nullopt;
  auto same_type = [&](const Value* v) { return v && v->type() == x->type(); };
  if (x->uses().size() == 1) {
    Node* u = x->uses()[0].node;
    if (u->outputs().size() != 1 || !same_type(u->outputs()[0]) || u->inputs().size() != 1) return std::nullopt;
    if (Is(u, "Relu")) return Activation{"Relu", {u}, u->outputs()[0]};
    if (Is(u, "Gelu")) {
      const ir::Attribute* a = u->FindAttribute("approximate");
      std::string approximate = a ? a->s : "none";
      if (approximate == "none") return Activation{"Gelu", {u}, u->outputs()[0]};
      if (approximate == "tanh") return Activation{"GeluTanh", {u}, u->outputs()[0]};
    }
    return std::nullopt;
  }
  // The decomposed Erf GELU: x * 0.5 * (1 + Erf(x / sqrt 2)), 0.5 applied first or last.
  if (x->uses().size() != 2) return std::nullopt;
  Node *scale = nullptr, *second = nullptr;
  for (const ir::Use& u : x->uses()) {
    Node* n = u.node;
    bool is_scale = (Is(n, "Div") && InV(n, 0) == x && Near(Scalar(InV(n, 1)), std::sqrt(2.0))) ||
                    (Is(n, "Mul") && Near(Scalar(Other(n, x)), 1 / std::sqrt(2.0)));
    if (is_scale && !scale) scale = n;
    else second = n;
  }
  if (!scale || !second || !Private(g, scale->outputs()[0])) return std::nullopt;
  Node* erf = OnlyUser(scale);
  if (!Is(erf, "Erf") || !Private(g, erf->outputs()[0])) return std::nullopt;
  Node* add = OnlyUser(erf);
  if (!Is(add, "Add") || !Near(Scalar(Other(add, erf->outputs()[0])), 1.0) || !Private(g, add->outputs()[0])) return std::nullopt;
  Node* m1 = OnlyUser(add);
  if (!Is(m1, "Mul")) return std::nullopt;
  Value* other = Other(m1, add->outputs()[0]);
  Activation act{"Gelu", {}, nullptr};
  if (other == x) {  // (x * (1 + erf)) * 0.5
    if (m1 != second || !Private(g, m1->outputs()[0])) return std::nullopt;
    Node* half = OnlyUser(m1);
    if (!Is(half, "Mul") || !Near(Scalar(Other(half, m1->outputs()[0])), 0.5)) return std::nullopt;
    act.nodes = {scale, erf, add, m1, half};
    act.out = half->outputs()[0];
  } else {  // (x * 0.5) * (1 + erf)
    Node* xhalf = Producer(other);
    if (xhalf != second || !Is(xhalf, "Mul") || !Near(Scalar(Other(xhalf, x)), 0.5) || !Private(g, other)) return std::nullopt;
    act.nodes = {xhalf, scale, erf, add, m1};
    act.out = m1->outputs()[0];
  }
  for (Node* n : act.nodes)
    if (n->outputs().size() != 1 || n->outputs()[0]->type().dtype() != x->type().dtype()) return std::nullopt;
  if (!same_type(act.out)) return std::nullopt;
  return act;
}

std::string Fused(const std::optional<Activation>& act) { return act ? " and " + act->name : ""; }

// Removes a chain whose last output nobody reads any more, last node first.
void RemoveChain(ir::Graph& g, const std::vector<Node*>& chain) {
  for (auto it = chain.rbegin(); it != chain.rend(); ++it) g.RemoveNode(*it);
}

// MatMul(A, B) -> Add(bias) [-> activation].
struct BiasMatch {
  Node* matmul;
  Node* add;
  Value* bias;
  std::optional<Activation> act;
};

std::optional<BiasMatch> MatchBias(const ir::Graph& g, Node* m) {
  if (!Is(m, "MatMul") || m->inputs().size() != 2 || m->outputs().size() != 1) return std::nullopt;
  Value *a = m->inputs()[0], *b = m->inputs()[1], *x = m->outputs()[0];
  auto ad = StaticDims(a), bd = StaticDims(b), xd = StaticDims(x);
  if (!ad || !bd || !xd || ad->size() < 2 || bd->size() != 2 || !Private(g, x) || !IsFloat(x->type().dtype())) return std::nullopt;
  if (a->type().dtype() != b->type().dtype()) return std::nullopt;
  for (int64_t d : *ad)
    if (d <= 0) return std::nullopt;
  int64_t n = (*bd)[1];
  Node* add = x->uses()[0].node;
  Value* bias = Other(add, x);
  if (!Is(add, "Add") || !bias || bias == x || add->outputs().size() != 1) return std::nullopt;
  auto cd = StaticDims(bias);
  if (!cd || cd->empty() || cd->back() != n || bias->type().dtype() != x->type().dtype()) return std::nullopt;
  for (size_t i = 0; i + 1 < cd->size(); ++i)
    if ((*cd)[i] != 1) return std::nullopt;
  if (cd->size() > 2 && !bias->is_constant()) return std::nullopt;
  Value* z = add->outputs()[0];
  if (!z || z->type() != x->type() || IsGraphOutput(g, z)) return std::nullopt;
  auto act = ActivationOf(g, z);
  if (act && IsGraphOutput(g, act->out)) act.reset();  // the output keeps its name: the activation stays
  return BiasMatch{m, add, bias, act};
}

void RewriteBias(ir::Graph& g, const BiasMatch& match) {
  Node *m = match.matmul, *last = match.act ? match.act->nodes.back() : match.add;
  Value *a = m->inputs()[0], *b = m->inputs()[1], *x = m->outputs()[0];
  Value* out = match.act ? match.act->out : match.add->outputs()[0];
  std::vector<int64_t> ad = *StaticDims(a), bd = *StaticDims(b), od = *StaticDims(out);
  int64_t k = ad.back(), n = bd[1], rows = 1;
  for (size_t i = 0; i + 1 < ad.size(); ++i) rows *= ad[i];
  ir::DType dtype = x->type().dtype();
  auto tensor_type = [](ir::DType t, std::vector<int64_t> dims) { return ir::Type::Tensor(t, ir::Shape::FromStatic(dims)); };
  Value* bias = match.bias;
  if (StaticDims(bias)->size() > 2)
    bias = g.AddConstant(FreshName(g, bias->name() + ".row"), ir::Tensor(bias->data()->dtype(), {n}, bias->data()->buffer()));

  std::vector<Node*> added;
  ir::PrecisionRecord view{ir::DType::kUndefined, std::string(ir::ReasonName(ir::Reason::kFusion)), "2-D view for the fused Gemm '" + m->name() + "'"};
  if (m->precision().empty()) view = {};
  std::vector<ir::Attribute> attrs;
  if (match.act) attrs.push_back(StringAttr("activation", match.act->name));
  Value* y = g.NewValue(FreshName(g, out->name() + ".gemm"));
  if (ad.size() == 2) {
    y->set_type(out->type());
    added.push_back(g.AddNode("", "Gemm", m->name(), {a, b, bias}, {y}, std::move(attrs)));
  } else {
    Value* a2 = g.NewValue(FreshName(g, a->name() + ".2d"));
    a2->set_type(tensor_type(a->type().dtype(), {rows, k}));
    added.push_back(g.AddNode("", "Reshape", FreshName(g, m->name() + ".view_a"), {a, ShapeConstant(g, a->name() + ".2d_shape", {rows, k})}, {a2}, {}));
    added.back()->mutable_precision() = view;
    y->set_type(tensor_type(dtype, {rows, n}));
    added.push_back(g.AddNode("", "Gemm", m->name(), {a2, b, bias}, {y}, std::move(attrs)));
    Value* y3 = g.NewValue(FreshName(g, out->name() + ".view"));
    y3->set_type(out->type());
    added.push_back(g.AddNode("", "Reshape", FreshName(g, m->name() + ".view_y"), {y, ShapeConstant(g, out->name() + ".shape", od)}, {y3}, {}));
    added.back()->mutable_precision() = view;
    y = y3;
  }
  Node* gemm = added.size() == 1 ? added[0] : added[1];
  gemm->mutable_precision() = m->precision();
  AddEvidence(gemm, "epilogue: bias '" + match.bias->name() + "'" + Fused(match.act) + " fused (MatMul + Add" +
                        (match.act ? " + " + match.act->name : "") + " -> Gemm)");

  // The new nodes go where the chain ended: every input is defined before it, every reader after.
  std::vector<Node*> order;
  for (const auto& up : g.nodes()) {
    Node* node = up.get();
    if (std::find(added.begin(), added.end(), node) != added.end()) continue;
    if (node == last) order.insert(order.end(), added.begin(), added.end());
    order.push_back(node);
  }
  g.SetNodeOrder(order);

  g.ReplaceAllUses(out, y);
  std::vector<Node*> chain{m, match.add};
  if (match.act) chain.insert(chain.end(), match.act->nodes.begin(), match.act->nodes.end());
  RemoveChain(g, chain);
}

// CPU plans: Clip(x, lo, hi) with constant bounds (ReLU6), lo <= hi. The bounds go to the step
// as activation_min / activation_max. Rounding to the output dtype is monotone, so clipping the
// FP32 result before it (the post-op) gives the values of clipping the stored result. NaN: a fused
// Clip gives lo, as oneDNN's clip post-op does (onnxruntime's fused Conv+Clip too), while the Clip
// kernel keeps it.
std::optional<std::pair<float, float>> ClipBounds(const Node* u) {
  double lo = -INFINITY, hi = INFINITY;
  if (u->inputs().size() > 1) {  // opset 11 and later: optional inputs
    for (size_t i = 1; i < u->inputs().size() && i < 3; ++i) {
      const Value* b = u->inputs()[i];
      if (!b) continue;
      std::optional<double> v = Scalar(b);
      if (!v) return std::nullopt;
      (i == 1 ? lo : hi) = *v;
    }
  } else {
    if (const ir::Attribute* a = u->FindAttribute("min")) lo = a->f;
    if (const ir::Attribute* a = u->FindAttribute("max")) hi = a->f;
  }
  if (!(lo <= hi) || double(float(lo)) != lo || double(float(hi)) != hi) return std::nullopt;
  return std::make_pair(float(lo), float(hi));
}

bool TakesActivation(const Node* p, const std::string& act) {
  if (p->FindAttribute("activation") || p->outputs().empty() || !p->outputs()[0]) return false;
  if (Is(p, "MatMul") || Is(p, "Gemm")) return true;
  return (Is(p, "Conv") || Is(p, "ConvTranspose")) && act == "Relu";
}

}  // namespace

EpilogueStats FuseEpilogues(ir::Graph& graph, EpilogueTarget target) {
  EpilogueStats stats;
  std::vector<BiasMatch> bias;
  if (target == EpilogueTarget::kCuda) {
    for (const auto& up : graph.nodes())
      if (auto m = MatchBias(graph, up.get())) bias.push_back(*m);
    for (const BiasMatch& m : bias) RewriteBias(graph, m);
  }
  stats.bias = int(bias.size());

  struct Fusion {
    Node* product;
    Activation act;
    std::optional<std::pair<float, float>> clip;
  };
  std::vector<Fusion> fusions;
  for (const auto& up : graph.nodes()) {
    Node* p = up.get();
    Value* x = p->outputs().empty() ? nullptr : p->outputs()[0];
    if (target == EpilogueTarget::kCpu) {
      // CPU plans: a Conv's Relu or Clip, which oneDNN's convolution applies before storing Y.
      if (!Is(p, "Conv") || p->FindAttribute("activation") || !x || !Private(graph, x) || !IsFloat(x->type().dtype())) continue;
      Node* u = x->uses()[0].node;
      if (u->outputs().size() != 1 || !u->outputs()[0] || u->outputs()[0]->type() != x->type() || InV(u, 0) != x ||
          IsGraphOutput(graph, u->outputs()[0]))
        continue;
      if (Is(u, "Relu") && u->inputs().size() == 1) fusions.push_back({p, Activation{"Relu", {u}, u->outputs()[0]}, std::nullopt});
      else if (Is(u, "Clip"))
        if (auto bounds = ClipBounds(u)) fusions.push_back({p, Activation{"Clip", {u}, u->outputs()[0]}, bounds});
      continue;
    }
    if (!(Is(p, "MatMul") || Is(p, "Gemm") || Is(p, "Conv") || Is(p, "ConvTranspose"))) continue;
    auto act = ActivationOf(graph, x);
    if (!act || IsGraphOutput(graph, act->out) || !TakesActivation(p, act->name)) continue;
    fusions.push_back({p, *act, std::nullopt});
  }
  for (Fusion& f : fusions) {
    Value* x = f.product->outputs()[0];
    auto& attrs = f.product->mutable_attributes();
    attrs.push_back(StringAttr("activation", f.act.name));
    std::string what = f.act.name;
    if (f.clip) {
      attrs.push_back(FloatAttr("activation_min", f.clip->first));
      attrs.push_back(FloatAttr("activation_max", f.clip->second));
      std::ostringstream bounds;
      bounds << " [" << f.clip->first << ", " << f.clip->second << "]";
      what += bounds.str();
    }
    AddEvidence(f.product, "epilogue: " + what + " fused");
    graph.ReplaceAllUses(f.act.out, x);
    RemoveChain(graph, f.act.nodes);
  }
  stats.activations = int(fusions.size()) + int(std::count_if(bias.begin(), bias.end(), [](const BiasMatch& m) { return m.act.has_value(); }));
  return stats;
}

}  // namespace precis::passes
