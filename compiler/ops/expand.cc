// Operator expansion (see expand.h): the Expander, the table, and the legacy broadcast form.
#include "compiler/ops/expand.h"

#include <algorithm>
#include <cmath>

#include "runtime/base/check.h"

namespace precis::ops {

namespace {

std::string Label(const ir::Node& node) {
  return node.name().empty() ? node.op_type() + std::to_string(node.index()) : node.name();
}

}  // namespace

Expander::Expander(ir::Graph& graph, ir::Node& node, int64_t opset)
    : IrBuilder(graph, opset, Label(node), node.Describe()), node_(node), nodes_before_(graph.nodes().size()) {
  type_outputs_ = false;
  number_node_names_ = true;
}

StatusOr<std::vector<ir::Dim>> Expander::InputDims(size_t i) const {
  ir::Value* v = in(i);
  if (!v) return Error("input " + std::to_string(i) + " is missing");
  const ir::Type& t = v->type();
  if (!t.is_tensor() || !t.shape().has_rank())
    return Unsupported("input " + std::to_string(i) + " ('" + v->name() + "') has no known rank");
  return t.shape().dims();
}

int64_t Expander::Int(const char* name, int64_t fallback) const {
  const ir::Attribute* a = node_.FindAttribute(name);
  return a && a->kind == ir::Attribute::Kind::kInt ? a->i : fallback;
}

float Expander::Float(const char* name, float fallback) const {
  const ir::Attribute* a = node_.FindAttribute(name);
  return a && a->kind == ir::Attribute::Kind::kFloat ? a->f : fallback;
}

Status Expander::Error(const std::string& message) const { return InvalidArgument(node_.Describe() + ": " + message); }
Status Expander::Unsupported(const std::string& message) const { return Unimplemented(node_.Describe() + ": " + message); }

ir::Value* Expander::ShapeOf(ir::Value* v, int64_t start, int64_t end) {
  return Op("Shape", {v}, {GradAttr::Int("start", start), GradAttr::Int("end", end)});
}

ir::Value* Expander::FloatScalar(double value, ir::DType dtype) {
  if (dtype == ir::DType::kF32 || dtype == ir::DType::kF64) return Scalar(value, dtype);
  return Op("Cast", {Scalar(value, ir::DType::kF32)}, {GradAttr::Int("to", int64_t(ir::DTypeToOnnx(dtype)))});
}

void Expander::MoveBuiltNodesBefore(ir::Node* anchor) {
  const auto& nodes = graph_.nodes();
  if (nodes.size() == nodes_before_) return;
  std::vector<ir::Node*> order;
  order.reserve(nodes.size());
  size_t at = size_t(anchor->index());
  for (size_t i = 0; i < at; ++i) order.push_back(nodes[i].get());
  for (size_t i = nodes_before_; i < nodes.size(); ++i) order.push_back(nodes[i].get());
  for (size_t i = at; i < nodes_before_; ++i) order.push_back(nodes[i].get());
  graph_.SetNodeOrder(order);
}

void Expander::KeepNode() { MoveBuiltNodesBefore(&node_); }

void Expander::Replace(const std::vector<ir::Value*>& values) {
  size_t first_built = size_t(node_.index());
  MoveBuiltNodesBefore(&node_);
  std::vector<ir::Node*> identities;
  std::vector<std::pair<ir::Value*, ir::Value*>> renamed;  // built value -> the original it became
  for (size_t i = 0; i < node_.outputs().size(); ++i) {
    ir::Value* original = node_.outputs()[i];
    if (!original) continue;
    ir::Value* v = i < values.size() ? values[i] : nullptr;
    PRECIS_CHECK(v) << what_ << ": output " << i << " was not built";
    for (const auto& [from, to] : renamed)
      if (from == v) v = to;
    graph_.SetNodeOutput(&node_, int(i), graph_.NewValue(Fresh(base_ + "_replaced")));
    ir::Node* producer = v->kind() == ir::Value::Kind::kNodeOutput ? v->producer() : nullptr;
    bool built = producer && producer != &node_ && size_t(producer->index()) >= first_built && v->owner() == &graph_ &&
                 std::none_of(renamed.begin(), renamed.end(), [&](const auto& r) { return r.second == v; });
    if (built) {
      // The built node produces the original value itself, so names (graph outputs) survive.
      int index = v->output_index();
      graph_.ReplaceAllUses(v, original);
      graph_.SetNodeOutput(producer, index, original);
      renamed.emplace_back(v, original);
    } else {
      // An input passed through (or one value for two outputs): an Identity gives it the name.
      identities.push_back(graph_.AddNode("", "Identity", Fresh(base_ + "/Identity"), {v}, {original}, {}));
    }
  }
  // The Identity nodes were appended last; they go in front of the node, after the built ones.
  if (!identities.empty()) {
    const auto& nodes = graph_.nodes();
    std::vector<ir::Node*> order;
    size_t at = size_t(node_.index());
    for (size_t i = 0; i < at; ++i) order.push_back(nodes[i].get());
    for (ir::Node* n : identities) order.push_back(n);
    for (size_t i = at; i < nodes.size() - identities.size(); ++i) order.push_back(nodes[i].get());
    graph_.SetNodeOrder(order);
  }
  graph_.RemoveNode(&node_);
  for (const auto& r : renamed) graph_.RemoveOrphanValue(r.first);
}

namespace {

// Before opset 7, Add, Mul, Pow, Equal... broadcast only with broadcast=1, and then align the
// second input's dims with the first's at `axis` (default: the trailing dims, as numpy does).
// The rewrite leaves broadcast=1 without `axis`, numpy's alignment: an Unsqueeze gives the
// second input trailing 1s where `axis` asks for them. (broadcast=0 and equal shapes are checked
// by shape inference, CheckLegacyBroadcast.)
StatusOr<bool> ExpandLegacyBroadcast(Expander& e) {
  ir::Node& node = e.node();
  if (e.Int("broadcast", 0) == 0 || !e.Has("axis") || node.inputs().size() < 2) return false;
  int64_t given_axis = e.Int("axis", 0), axis = given_axis;
  std::erase_if(node.mutable_attributes(), [](const ir::Attribute& a) { return a.name == "axis"; });
  PRECIS_ASSIGN_OR_RETURN(auto a, e.InputDims(0));
  PRECIS_ASSIGN_OR_RETURN(auto b, e.InputDims(1));
  int64_t ra = int64_t(a.size()), rb = int64_t(b.size());
  if (axis < 0) axis += ra;
  int64_t trailing = ra - axis - rb;
  if (axis < 0 || trailing < 0)
    return e.Error("axis " + std::to_string(given_axis) + " does not place a rank-" + std::to_string(rb) + " input inside rank " +
                   std::to_string(ra));
  if (trailing == 0) return false;
  std::vector<int64_t> axes;
  for (int64_t k = 0; k < trailing; ++k) axes.push_back(rb + k);
  ir::Value* widened = e.Op("Unsqueeze", {e.in(1)}, {GradAttr::Ints("axes", axes)});
  node.owner()->SetNodeInput(&node, 1, widened);
  e.KeepNode();
  return true;
}

struct ExpandDef {
  const char* domain;
  const char* op_type;
  int64_t min_opset, max_opset;
  ExpandFn fn;
};

const ExpandDef kExpanders[] = {
    {"", "Add", 1, 6, ExpandLegacyBroadcast},
    {"", "Sub", 1, 6, ExpandLegacyBroadcast},
    {"", "Mul", 1, 6, ExpandLegacyBroadcast},
    {"", "Div", 1, 6, ExpandLegacyBroadcast},
    {"", "Pow", 1, 6, ExpandLegacyBroadcast},
    {"", "And", 1, 6, ExpandLegacyBroadcast},
    {"", "Or", 1, 6, ExpandLegacyBroadcast},
    {"", "Xor", 1, 6, ExpandLegacyBroadcast},
    {"", "Equal", 1, 6, ExpandLegacyBroadcast},
    {"", "Greater", 1, 6, ExpandLegacyBroadcast},
    {"", "Less", 1, 6, ExpandLegacyBroadcast},
    {"", "Attention", 23, INT_MAX, ExpandAttention},
    {"", "RMSNormalization", 23, INT_MAX, ExpandRmsNormalization},
    {"", "RotaryEmbedding", 23, INT_MAX, ExpandRotaryEmbedding},
    {"", "Swish", 24, INT_MAX, ExpandSwish},
    {"", "BatchNormalization", 14, INT_MAX, ExpandBatchNormTraining},
};

}  // namespace

ExpandFn FindExpander(const std::string& domain, const std::string& op_type, int64_t opset) {
  for (const ExpandDef& d : kExpanders)
    if (op_type == d.op_type && domain == d.domain && opset >= d.min_opset && opset <= d.max_opset) return d.fn;
  return nullptr;
}

}  // namespace precis::ops
