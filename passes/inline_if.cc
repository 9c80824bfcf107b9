// InlineConstantIf (see inline_if.h). Collect the Ifs to inline, then splice each one.
#include "passes/inline_if.h"

#include <unordered_map>

#include "passes/match.h"

namespace precis::passes {
namespace {

using match::FreshName;

// The condition's value when it is a one-element constant, else -1.
int ConstantCondition(const ir::Node& n) {
  if (n.inputs().empty() || !n.inputs()[0]) return -1;
  const ir::Value* c = n.inputs()[0];
  if (!c->is_constant() || !c->data() || !c->data()->has_data() || c->data()->NumElements() != 1) return -1;
  const ir::Tensor& t = *c->data();
  if (t.dtype() != ir::DType::kBool && t.dtype() != ir::DType::kU8) return -1;
  return t.buffer().data()[0] != 0 ? 1 : 0;
}

const ir::Graph* Branch(const ir::Node& n, bool then) {
  const ir::Attribute* a = n.FindAttribute(then ? "then_branch" : "else_branch");
  return a && a->graphs.size() == 1 ? a->graphs[0].get() : nullptr;
}

// Copies the branch's constants and nodes into `g` and returns the copies of its outputs.
std::vector<ir::Value*> Splice(ir::Graph& g, const ir::Node& if_node, const ir::Graph& branch, std::vector<ir::Node*>& added) {
  std::unordered_map<const ir::Value*, ir::Value*> map;
  std::string prefix = (if_node.name().empty() ? "if" : if_node.name()) + "/";
  for (const ir::Value* c : branch.constants()) map[c] = g.AddConstant(FreshName(g, prefix + c->name()), *c->data());
  auto mapped = [&](ir::Value* v) -> ir::Value* {
    if (!v) return nullptr;
    auto it = map.find(v);
    return it == map.end() ? v : it->second;  // not in the branch: an outer-scope value
  };
  for (const auto& n : branch.nodes()) {
    std::vector<ir::Value*> ins, outs;
    for (ir::Value* v : n->inputs()) ins.push_back(mapped(v));
    for (ir::Value* v : n->outputs()) {
      if (!v) {
        outs.push_back(nullptr);
        continue;
      }
      ir::Value* copy = g.NewValue(FreshName(g, prefix + v->name()));
      copy->set_type(v->type());
      map[v] = copy;
      outs.push_back(copy);
    }
    std::vector<ir::Attribute> attrs;
    for (const ir::Attribute& a : n->attributes()) attrs.push_back(ir::CloneAttribute(a, mapped));
    added.push_back(g.AddNode(n->domain(), n->op_type(), n->name().empty() ? "" : prefix + n->name(), std::move(ins), std::move(outs),
                              std::move(attrs)));
  }
  std::vector<ir::Value*> results;
  for (ir::Value* v : branch.outputs()) results.push_back(mapped(v));
  return results;
}

}  // namespace

int InlineConstantIf(ir::Graph& g) {
  std::vector<ir::Node*> ifs;
  for (const auto& n : g.nodes()) {
    if (!n->domain().empty() || n->op_type() != "If" || ConstantCondition(*n) < 0) continue;
    const ir::Graph* b = Branch(*n, ConstantCondition(*n) == 1);
    if (!b || b->outputs().size() != n->outputs().size()) continue;
    bool nested = false;
    for (const auto& inner : b->nodes())
      for (const auto& a : inner->attributes()) nested |= !a.graphs.empty();
    if (!nested) ifs.push_back(n.get());
  }
  if (ifs.empty()) return 0;
  std::unordered_map<ir::Node*, std::vector<ir::Node*>> replacement;  // If -> nodes in its place
  for (ir::Node* n : ifs) {
    std::vector<ir::Node*>& added = replacement[n];
    std::vector<ir::Value*> results = Splice(g, *n, *Branch(*n, ConstantCondition(*n) == 1), added);
    for (size_t i = 0; i < n->outputs().size(); ++i) {
      ir::Value* out = n->outputs()[i];
      if (!out) continue;
      ir::Value* detached = g.NewValue(FreshName(g, out->name() + ".if"));
      g.SetNodeOutput(n, int(i), detached);
      added.push_back(g.AddNode("", "Identity", FreshName(g, out->name() + ".inlined"), {results[i]}, {out}, {}));
    }
  }
  std::vector<ir::Node*> order;
  std::unordered_map<ir::Node*, bool> is_added;
  for (auto& [n, added] : replacement)
    for (ir::Node* a : added) is_added[a] = true;
  for (const auto& n : g.nodes()) {
    if (is_added.count(n.get())) continue;
    if (auto it = replacement.find(n.get()); it != replacement.end()) order.insert(order.end(), it->second.begin(), it->second.end());
    order.push_back(n.get());
  }
  g.SetNodeOrder(order);
  for (ir::Node* n : ifs) g.RemoveNode(n);
  return int(ifs.size());
}

}  // namespace precis::passes
