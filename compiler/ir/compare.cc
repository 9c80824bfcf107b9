// Structural comparison of IR graphs, used by the text round-trip checks.
#include "compiler/ir/compare.h"

#include <cmath>
#include <cstring>

#include "compiler/ir/text.h"

namespace precis::ir {
namespace {

class Comparer {
 public:
  explicit Comparer(std::string* why) : why_(why) {}

  bool Models(const Model& a, const Model& b) {
    if (a.ir_version != b.ir_version) return Fail("ir_version differs");
    if (a.producer_name != b.producer_name || a.producer_version != b.producer_version)
      return Fail("producer differs");
    if (a.domain != b.domain || a.model_version != b.model_version) return Fail("model domain/version differs");
    if (a.opsets != b.opsets) return Fail("opsets differ");
    return Graphs(*a.graph, *b.graph);
  }

  bool Graphs(const Graph& a, const Graph& b) {
    std::string where = "graph '" + a.name() + "'";
    if (a.name() != b.name()) return Fail(where + ": name differs from '" + b.name() + "'");
    if (!ValueLists(a.inputs(), b.inputs(), where + " inputs")) return false;
    if (!ValueLists(a.constants(), b.constants(), where + " constants")) return false;
    if (!ValueLists(a.outputs(), b.outputs(), where + " outputs")) return false;
    if (a.nodes().size() != b.nodes().size())
      return Fail(where + ": " + std::to_string(a.nodes().size()) + " nodes vs " +
                  std::to_string(b.nodes().size()));
    for (size_t i = 0; i < a.nodes().size(); ++i)
      if (!Nodes(*a.nodes()[i], *b.nodes()[i])) return false;
    return true;
  }

 private:
  bool Fail(const std::string& message) {
    if (why_ && why_->empty()) *why_ = message;
    return false;
  }

  bool Values(const Value* a, const Value* b, const std::string& where) {
    if (!a || !b) return a == b || Fail(where + ": omitted value on one side only");
    if (a->name() != b->name()) return Fail(where + ": value '" + a->name() + "' vs '" + b->name() + "'");
    if (a->kind() != b->kind()) return Fail(where + ": value '" + a->name() + "' kind differs");
    if (a->type() != b->type())
      return Fail(where + ": value '" + a->name() + "' type " + PrintType(a->type()) + " vs " +
                  PrintType(b->type()));
    if (!a->data() != !b->data()) return Fail(where + ": value '" + a->name() + "' data on one side only");
    if (a->data() && !a->data()->SameContent(*b->data()))
      return Fail(where + ": value '" + a->name() + "' data differs");
    return true;
  }

  bool ValueLists(const std::vector<Value*>& a, const std::vector<Value*>& b, const std::string& where) {
    if (a.size() != b.size()) return Fail(where + ": count differs");
    for (size_t i = 0; i < a.size(); ++i)
      if (!Values(a[i], b[i], where)) return false;
    return true;
  }

  bool Nodes(const Node& a, const Node& b) {
    std::string where = a.Describe();
    if (a.domain() != b.domain() || a.op_type() != b.op_type() || a.name() != b.name())
      return Fail(where + ": differs from " + b.Describe());
    if (a.inputs().size() != b.inputs().size()) return Fail(where + ": input count differs");
    for (size_t i = 0; i < a.inputs().size(); ++i) {
      const Value *x = a.inputs()[i], *y = b.inputs()[i];
      if (!x || !y) {
        if (x != y) return Fail(where + ": input " + std::to_string(i) + " omitted on one side");
      } else if (x->name() != y->name()) {
        return Fail(where + ": input " + std::to_string(i) + " '" + x->name() + "' vs '" + y->name() + "'");
      }
    }
    if (!ValueLists(a.outputs(), b.outputs(), where + " outputs")) return false;
    if (a.attributes().size() != b.attributes().size()) return Fail(where + ": attribute count differs");
    for (size_t i = 0; i < a.attributes().size(); ++i)
      if (!Attributes(a.attributes()[i], b.attributes()[i], where)) return false;
    const PrecisionRecord &p = a.precision(), &q = b.precision();
    if (p.accumulate != q.accumulate || p.reason != q.reason || p.evidence != q.evidence)
      return Fail(where + ": precision records differ");
    return true;
  }

  static bool SameFloat(float x, float y) { return std::memcmp(&x, &y, 4) == 0; }

  bool Attributes(const Attribute& a, const Attribute& b, const std::string& node) {
    using K = Attribute::Kind;
    std::string where = node + " attribute '" + a.name + "'";
    if (a.name != b.name || a.kind != b.kind) return Fail(where + ": name or kind differs");
    switch (a.kind) {
      case K::kFloat: return SameFloat(a.f, b.f) || Fail(where + ": value differs");
      case K::kInt: return a.i == b.i || Fail(where + ": value differs");
      case K::kString: return a.s == b.s || Fail(where + ": value differs");
      case K::kTensor: return a.t.SameContent(b.t) || Fail(where + ": tensor differs");
      case K::kType: return a.type == b.type || Fail(where + ": type differs");
      case K::kFloats:
        if (a.floats.size() != b.floats.size()) return Fail(where + ": length differs");
        for (size_t i = 0; i < a.floats.size(); ++i)
          if (!SameFloat(a.floats[i], b.floats[i])) return Fail(where + ": element differs");
        return true;
      case K::kInts: return a.ints == b.ints || Fail(where + ": value differs");
      case K::kStrings: return a.strings == b.strings || Fail(where + ": value differs");
      case K::kTensors:
        if (a.tensors.size() != b.tensors.size()) return Fail(where + ": length differs");
        for (size_t i = 0; i < a.tensors.size(); ++i)
          if (!a.tensors[i].SameContent(b.tensors[i])) return Fail(where + ": tensor differs");
        return true;
      case K::kTypes: return a.types == b.types || Fail(where + ": types differ");
      case K::kGraph:
      case K::kGraphs:
        if (a.graphs.size() != b.graphs.size()) return Fail(where + ": graph count differs");
        for (size_t i = 0; i < a.graphs.size(); ++i)
          if (!Graphs(*a.graphs[i], *b.graphs[i])) return false;
        return true;
    }
    return true;
  }

  std::string* why_;
};

}  // namespace

bool ModelsEqual(const Model& a, const Model& b, std::string* why) {
  return Comparer(why).Models(a, b);
}
bool GraphsEqual(const Graph& a, const Graph& b, std::string* why) {
  return Comparer(why).Graphs(a, b);
}

}  // namespace precis::ir
