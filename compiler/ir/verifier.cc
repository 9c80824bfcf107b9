// IR verifier (see verifier.h for what it checks).
#include "compiler/ir/verifier.h"

#include <functional>
#include <unordered_set>

#include "compiler/ir/text.h"

namespace precis::ir {
namespace {

using ValueSet = std::unordered_set<const Value*>;
using NameSet = std::unordered_set<std::string>;

// What a subgraph sees of its enclosing graphs: per level, the values defined before the node
// that owns the subgraph, and all names. Chained rather than copied into each subgraph, so
// that many subgraphs under a graph of many values stay linear.
struct OuterScope {
  const ValueSet* defined;
  const NameSet* names;
  const OuterScope* parent;
};

bool DefinedOutside(const OuterScope* outer, const Value* v) {
  for (; outer; outer = outer->parent)
    if (outer->defined->count(v)) return true;
  return false;
}

bool NamedOutside(const OuterScope* outer, const std::string& name) {
  for (; outer; outer = outer->parent)
    if (outer->names->count(name)) return true;
  return false;
}

// Every recorded use (value, node, input index), gathered once so that checking a node input
// does not scan all uses of its value: one node reading a value thousands of times stays linear.
struct UseKey {
  const Value* value;
  const Node* node;
  int index;
  bool operator==(const UseKey& o) const { return value == o.value && node == o.node && index == o.index; }
};
struct UseKeyHash {
  size_t operator()(const UseKey& k) const {
    size_t h = std::hash<const void*>()(k.value);
    h = h * 31 + std::hash<const void*>()(k.node);
    return h * 31 + std::hash<int>()(k.index);
  }
};
using UseSet = std::unordered_set<UseKey, UseKeyHash>;

UseSet RecordedUses(const Graph& graph) {
  UseSet uses;
  ForEachGraph(graph, [&](const Graph& g) {
    for (const auto& v : g.values())
      for (const Use& u : v->uses()) uses.insert({v.get(), u.node, u.input_index});
  });
  return uses;
}

class Verifier {
 public:
  explicit Verifier(const UseSet& uses) : uses_(uses) {}

  Status Graph(const ir::Graph& g, const OuterScope* outer) {
    where_ = "graph '" + g.name() + "'";
    PRECIS_RETURN_IF_ERROR(Names(g, outer));
    ValueSet defined;
    for (const Value* v : g.inputs()) PRECIS_RETURN_IF_ERROR(Input(g, v, defined));
    for (const Value* v : g.constants()) PRECIS_RETURN_IF_ERROR(Constant(g, v, defined));
    // A sequence or optional resolved at compile time (passes/sequences.h) is defined by its
    // elements until shape inference resolves what reads it.
    for (const auto& v : g.values())
      if (v->kind() == Value::Kind::kNodeOutput && !v->producer() && v->resolved_container()) defined.insert(v.get());
    NameSet names;
    for (const auto& v : g.values())
      if (!v->name().empty()) names.insert(v->name());
    OuterScope scope{&defined, &names, outer};
    for (const auto& n : g.nodes()) PRECIS_RETURN_IF_ERROR(NodeChecks(g, *n, defined, scope));
    for (const Value* v : g.outputs()) {
      if (!v) return Fail("a graph output is missing");
      if (!defined.count(v) && !DefinedOutside(outer, v))
        return Fail("output '" + v->name() + "' is not defined in this graph or an enclosing one");
    }
    for (const auto& v : g.values())
      if (v->kind() == Value::Kind::kNodeOutput && v->producer() == nullptr && !v->resolved_container())
        return Fail("value '" + v->name() + "' has no producer");
    return Status::Ok();
  }

 private:
  Status Fail(const std::string& message) const { return InvalidArgument(where_ + ": " + message); }

  Status Names(const ir::Graph& g, const OuterScope* outer) {
    NameSet seen;
    for (const auto& v : g.values()) {
      if (v->owner() != &g) return Fail("value '" + v->name() + "' has the wrong owner");
      if (v->name().empty()) return Fail("a value has an empty name");
      if (!seen.insert(v->name()).second) return Fail("duplicate value name '" + v->name() + "'");
      if (NamedOutside(outer, v->name()))
        return Fail("value '" + v->name() + "' shadows a value of an enclosing graph");
    }
    return Status::Ok();
  }

  Status Input(const ir::Graph& g, const Value* v, ValueSet& defined) {
    if (v->owner() != &g || v->kind() != Value::Kind::kInput) return Fail("input '" + v->name() + "' is not an input value");
    if (v->data()) PRECIS_RETURN_IF_ERROR(DataMatchesType(v));
    defined.insert(v);
    return Status::Ok();
  }

  Status Constant(const ir::Graph& g, const Value* v, ValueSet& defined) {
    if (v->owner() != &g || v->kind() != Value::Kind::kConstant || !v->data())
      return Fail("constant '" + v->name() + "' has no data");
    PRECIS_RETURN_IF_ERROR(DataMatchesType(v));
    defined.insert(v);
    return Status::Ok();
  }

  Status DataMatchesType(const Value* v) {
    const Tensor& t = *v->data();
    Type expect = Type::Tensor(t.dtype(), Shape::FromStatic(t.dims()));
    if (v->type() != expect)
      return Fail("'" + v->name() + "' has type " + PrintType(v->type()) + " but its data is " + PrintType(expect));
    return Status::Ok();
  }

  bool HasUse(const Value* v, const Node* n, int i) const { return uses_.count({v, n, i}) != 0; }

  // `scope` is this graph's level (its `defined` and names) over the enclosing ones.
  Status NodeChecks(const ir::Graph& g, const Node& n, ValueSet& defined, const OuterScope& scope) {
    std::string node = n.Describe();
    if (n.owner() != &g || g.nodes()[size_t(n.index())].get() != &n) return Fail(node + ": wrong owner or index");
    if (n.op_type().empty()) return Fail(node + ": empty operator type");
    for (size_t i = 0; i < n.inputs().size(); ++i) {
      const Value* v = n.inputs()[i];
      if (!v) continue;
      if (!defined.count(v) && !DefinedOutside(scope.parent, v))
        return Fail(node + ": input '" + v->name() + "' is not defined before this node (topological order or scope)");
      if (!HasUse(v, &n, int(i))) return Fail(node + ": use of '" + v->name() + "' is not recorded");
    }
    for (const auto& attr : n.attributes()) {
      if (attr.kind == Attribute::Kind::kGraph && attr.graphs.size() != 1)
        return Fail(node + ": graph attribute '" + attr.name + "' must hold one graph");
      for (const auto& sub : attr.graphs) {
        if (sub->parent_node() != &n) return Fail(node + ": subgraph '" + sub->name() + "' has the wrong parent");
        std::string saved = where_;
        Verifier inner(uses_);
        Status s = inner.Graph(*sub, &scope);
        if (!s.ok()) return s.WithContext(saved + ": " + node + " attribute '" + attr.name + "'");
      }
    }
    for (size_t i = 0; i < n.outputs().size(); ++i) {
      const Value* v = n.outputs()[i];
      if (!v) continue;
      if (v->producer() != &n || v->output_index() != int(i) || v->owner() != &g)
        return Fail(node + ": output '" + v->name() + "' does not record this node as its producer");
      if (!defined.insert(v).second) return Fail(node + ": output '" + v->name() + "' is defined twice");
    }
    return Status::Ok();
  }

  const UseSet& uses_;
  std::string where_;
};

}  // namespace

Status VerifyGraph(const Graph& graph) {
  UseSet uses = RecordedUses(graph);
  return Verifier(uses).Graph(graph, nullptr);
}

Status Verify(const Model& model) {
  if (model.ir_version < 3) return InvalidArgument("ir_version " + std::to_string(model.ir_version) + " is below 3");
  return VerifyGraph(*model.graph);
}

}  // namespace precis::ir
