// FuseCasts (see fuse_casts.h): collect the fusable casts, then retype each producer's output
// and let it take over the cast's uses.
#include "passes/fuse_casts.h"

#include <algorithm>
#include <functional>
#include <map>
#include <set>

#include "compiler/ir/precision_reason.h"
#include "compiler/ops/op_registry.h"
#include "passes/match.h"

namespace precis::passes {
namespace {

bool IsFloat16or32(const ir::Value* v) {
  if (!v || !v->type().is_tensor()) return false;
  ir::DType t = v->type().dtype();
  return t == ir::DType::kF32 || t == ir::DType::kF16 || t == ir::DType::kBF16;
}

bool Computes(const ir::Node& n) {
  const ops::OpDef* def = ops::OpRegistry::Get().Find(n.domain(), n.op_type());
  if (!def) return false;
  for (const auto& a : n.attributes())
    if (!a.graphs.empty()) return false;
  using P = ops::PrecisionClass;
  return def->precision == P::kCompute || def->precision == P::kFollow || def->precision == P::kKeepFp32;
}

// When `c` is a Cast between two float dtypes whose input is a node output of `graph` read by `c`
// alone (neither value a graph output): the node producing that input. Else nullptr.
ir::Node* SoleReaderCastOf(ir::Graph& graph, const ir::Node* c, const std::function<bool(const ir::Value*)>& is_output) {
  if (!c->domain().empty() || c->op_type() != "Cast" || c->inputs().size() != 1 || c->outputs().size() != 1) return nullptr;
  const ir::Value *y = c->inputs()[0], *z = c->outputs()[0];
  if (!IsFloat16or32(y) || !IsFloat16or32(z) || is_output(y) || is_output(z)) return nullptr;
  if (y->kind() != ir::Value::Kind::kNodeOutput || y->uses().size() != 1) return nullptr;
  ir::Node* p = y->producer();
  return p->owner() == &graph ? p : nullptr;
}

// Transpose(x): A -> Cast -> B, the Transpose's output read by the Cast alone, becomes
// Transpose(Cast(x -> B)): the same values (a cast commutes with moving data), and the Transpose
// moves B's bytes (half of them for a 16-bit B). The new Cast reads x itself: a 16-bit working
// copy of a master weight that an exporter transposes (a Linear's weight) becomes a cast of the
// master, which a training plan keeps as state.
bool HoistCastsAboveTransposes(ir::Graph& graph, const std::function<bool(const ir::Value*)>& is_output) {
  std::map<const ir::Node*, ir::Node*> cast_before;  // Transpose -> the new Cast in front of it
  for (const auto& up : graph.nodes()) {
    ir::Node* c = up.get();
    ir::Node* t = SoleReaderCastOf(graph, c, is_output);
    if (!t || !t->domain().empty() || t->op_type() != "Transpose" || t->inputs().size() != 1) continue;
    ir::Value *y = c->inputs()[0], *z = c->outputs()[0];
    ir::Value* x = t->inputs()[0];
    if (!IsFloat16or32(x) || x->type().dtype() != y->type().dtype() || cast_before.count(t)) continue;
    ir::DType to = z->type().dtype();
    ir::Value* cast = graph.NewValue(match::FreshName(graph, x->name() + "." + std::string(ir::DTypeName(to))));
    cast->set_type(ir::Type::Tensor(to, x->type().shape()));
    std::vector<ir::Attribute> attrs(1);
    attrs[0].name = "to", attrs[0].kind = ir::Attribute::Kind::kInt, attrs[0].i = int64_t(ir::DTypeToOnnx(to));
    ir::Node* moved = graph.AddNode("", "Cast", match::FreshName(graph, c->name().empty() ? "Cast" : c->name()), {x}, {cast}, std::move(attrs));
    moved->mutable_precision() = c->precision();
    graph.SetNodeInput(t, 0, cast);
    y->set_type(z->type());
    graph.ReplaceAllUses(z, y);
    graph.RemoveNode(c);
    auto& rec = t->mutable_precision();
    rec.reason = std::string(ir::ReasonName(ir::Reason::kFollowsInput));
    rec.evidence += std::string(rec.evidence.empty() ? "" : "; ") + "the cast to " + std::string(ir::DTypeName(to)) + " after it moved before it";
    cast_before[t] = moved;
  }
  if (cast_before.empty()) return false;
  std::vector<ir::Node*> order;
  std::set<const ir::Node*> moved;
  for (const auto& [t, cast] : cast_before) moved.insert(cast);
  for (const auto& up : graph.nodes()) {
    if (moved.count(up.get())) continue;
    if (auto it = cast_before.find(up.get()); it != cast_before.end()) order.push_back(it->second);
    order.push_back(up.get());
  }
  graph.SetNodeOrder(order);
  return true;
}

}  // namespace

bool FuseCasts(ir::Graph& graph) {
  auto is_output = [&](const ir::Value* v) {
    return std::find(graph.outputs().begin(), graph.outputs().end(), v) != graph.outputs().end();
  };
  bool hoisted = HoistCastsAboveTransposes(graph, is_output);
  std::vector<ir::Node*> casts;
  for (const auto& up : graph.nodes()) {
    ir::Node* c = up.get();
    const ir::Node* p = SoleReaderCastOf(graph, c, is_output);
    if (!p || !Computes(*p)) continue;
    casts.push_back(c);
  }
  for (ir::Node* c : casts) {
    ir::Value *y = c->inputs()[0], *z = c->outputs()[0];
    ir::Node* p = y->producer();
    y->set_type(z->type());
    graph.ReplaceAllUses(z, y);
    graph.RemoveNode(c);
    auto& rec = p->mutable_precision();
    rec.evidence += std::string(rec.evidence.empty() ? "" : "; ") + "writes " + std::string(ir::DTypeName(y->type().dtype())) +
                    " directly (cast fused)";
  }
  return hoisted || !casts.empty();
}

}  // namespace precis::passes
