// Operator expansion (see expand.h): the Expander, the table, and the legacy broadcast form.
#include "compiler/ops/expand.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <unordered_map>

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

std::vector<ir::Value*> Expander::Inline(const ir::Graph& body, const std::vector<ir::Value*>& inputs) {
  std::unordered_map<const ir::Value*, ir::Value*> map;
  for (size_t i = 0; i < body.inputs().size() && i < inputs.size(); ++i) map[body.inputs()[i]] = inputs[i];
  std::string prefix = base_ + "/" + body.name() + "/";
  ir::CopyNodes(graph_, body, map, [](ir::Value* v) { return v; }, [&](const std::string& name) { return Fresh(prefix + name); },
                /*untyped=*/true);
  std::vector<ir::Value*> outputs;
  for (ir::Value* v : body.outputs()) {
    auto it = map.find(v);
    outputs.push_back(it == map.end() ? v : it->second);
  }
  return outputs;
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

// Scan before opset 9 has a batch axis: states are [B, ...], scan inputs [B, T, ...], and the body
// sees one batch entry. Each entry becomes a Loop of T iterations whose body gathers the time step
// (from the end where `directions` says so) and then runs a copy of the Scan body; the entries'
// results are stacked. B and T must be static; per-entry sequence_lens are not supported.
StatusOr<bool> ExpandScan8(Expander& e) {
  ir::Node& node = e.node();
  ir::Graph& g = *node.owner();
  const ir::Attribute* attr = node.FindAttribute("body");
  if (!attr || attr->graphs.size() != 1) return e.Error("needs a body graph");
  const ir::Graph& body = *attr->graphs[0];
  int64_t m = e.Int("num_scan_inputs", -1);
  if (node.inputs().empty() || m < 1 || size_t(m) + 1 > node.inputs().size()) return e.Error("num_scan_inputs must be between 1 and the inputs after sequence_lens");
  if (e.in(0)) return e.Unsupported("sequence_lens (per-entry lengths) is not supported for Scan at opset 8");
  size_t n = node.inputs().size() - 1 - size_t(m), k = node.outputs().size() < n ? 0 : node.outputs().size() - n;
  if (node.outputs().size() < n || body.inputs().size() != n + size_t(m) || body.outputs().size() != n + k)
    return e.Error("the body must take the " + std::to_string(n) + " states and " + std::to_string(m) + " scan slices and give the states and the scan outputs");
  std::vector<int64_t> directions(size_t(m), 0);
  if (const ir::Attribute* d = node.FindAttribute("directions")) {
    if (d->ints.size() != size_t(m)) return e.Error("directions has " + std::to_string(d->ints.size()) + " values for " + std::to_string(m) + " scan inputs");
    directions = d->ints;
  }
  int64_t batch = -1, steps = -1;
  for (size_t j = 0; j < size_t(m); ++j) {
    PRECIS_ASSIGN_OR_RETURN(auto dims, e.InputDims(1 + n + j));
    if (dims.size() < 2 || !dims[0].is_static() || !dims[1].is_static()) return e.Unsupported("scan input " + std::to_string(j) + " needs a static batch and time axis");
    if ((batch >= 0 && dims[0].value() != batch) || (steps >= 0 && dims[1].value() != steps)) return e.Error("scan inputs differ in batch or time length");
    batch = dims[0].value(), steps = dims[1].value();
  }
  std::string base = (node.name().empty() ? std::string("Scan") : node.name()) + "/";
  auto i64 = [](int64_t v) {
    std::vector<uint8_t> bytes(8);
    std::memcpy(bytes.data(), &v, 8);
    return ir::Tensor(ir::DType::kI64, {}, ir::Buffer::Own(std::move(bytes)));
  };
  std::vector<std::vector<ir::Value*>> per_entry(n + k);
  for (int64_t b = 0; b < batch; ++b) {
    ir::Value* index = g.AddConstant(e.Fresh(base + "entry"), i64(b));
    std::vector<ir::Value*> loop_inputs = {g.AddConstant(e.Fresh(base + "steps"), i64(steps)), nullptr};
    for (size_t i = 0; i < n; ++i) loop_inputs.push_back(e.Op("Gather", {e.in(1 + i), index}, {GradAttr::Int("axis", 0)}));
    std::vector<ir::Value*> sequences;
    for (size_t j = 0; j < size_t(m); ++j) sequences.push_back(e.Op("Gather", {e.in(1 + n + j), index}, {GradAttr::Int("axis", 0)}));
    // The Loop body: (iteration, condition, states...) -> (condition, states..., scan slices...).
    std::string at = base + std::to_string(b) + "/";
    auto lb = std::make_unique<ir::Graph>(at + "body");
    ir::Value* iteration = lb->AddInput(at + "iteration", ir::Type::Tensor(ir::DType::kI64, ir::Shape::FromStatic({})));
    ir::Value* cond = lb->AddInput(at + "cond", ir::Type::Tensor(ir::DType::kBool, ir::Shape::FromStatic({})));
    std::unordered_map<const ir::Value*, ir::Value*> map;
    for (size_t i = 0; i < n; ++i) map[body.inputs()[i]] = lb->AddInput(at + body.inputs()[i]->name(), body.inputs()[i]->type());
    auto value = [&](const std::string& name) { return lb->NewValue(at + name); };
    ir::Value* last = lb->AddConstant(at + "last", i64(steps - 1));
    ir::Value* reversed = nullptr;
    for (size_t j = 0; j < size_t(m); ++j) {
      ir::Value* step = iteration;
      if (directions[j]) {
        if (!reversed) {
          reversed = value("reversed");
          lb->AddNode("", "Sub", at + "Sub", {last, iteration}, {reversed}, {});
        }
        step = reversed;
      }
      ir::Value* slice = value("slice" + std::to_string(j));
      std::vector<ir::Attribute> axis(1);
      axis[0].name = "axis", axis[0].kind = ir::Attribute::Kind::kInt, axis[0].i = 0;
      lb->AddNode("", "Gather", at + "Gather" + std::to_string(j), {sequences[j], step}, {slice}, std::move(axis));
      map[body.inputs()[n + j]] = slice;
    }
    ir::CopyNodes(*lb, body, map, [](ir::Value* v) { return v; }, [&](const std::string& name) { return at + name; });
    auto mapped = [&](ir::Value* v) {
      auto it = map.find(v);
      return it == map.end() ? v : it->second;
    };
    ir::Value* cond_out = value("cond_out");
    lb->AddNode("", "Identity", at + "Identity", {cond}, {cond_out}, {});
    lb->AddOutput(cond_out);
    for (ir::Value* v : body.outputs()) {
      // Loop body outputs are values the body produces: an Identity where the Scan body passes
      // one of its inputs (or an outer value) through.
      ir::Value* out = mapped(v);
      if (out->owner() != lb.get() || out->kind() != ir::Value::Kind::kNodeOutput) {
        ir::Value* copy = value(v->name() + "/out");
        lb->AddNode("", "Identity", at + v->name() + "/Identity", {out}, {copy}, {});
        out = copy;
      }
      lb->AddOutput(out);
    }
    std::vector<ir::Value*> loop_outputs;
    for (size_t i = 0; i < n + k; ++i) loop_outputs.push_back(g.NewValue(e.Fresh(base + "entry" + std::to_string(b))));
    std::vector<ir::Attribute> attrs(1);
    attrs[0].name = "body", attrs[0].kind = ir::Attribute::Kind::kGraph;
    attrs[0].graphs.push_back(std::move(lb));
    g.AddNode("", "Loop", base + "Loop" + std::to_string(b), loop_inputs, loop_outputs, std::move(attrs));
    for (size_t i = 0; i < n + k; ++i) per_entry[i].push_back(loop_outputs[i]);
  }
  std::vector<ir::Value*> results;
  for (auto& entries : per_entry) {
    std::vector<ir::Value*> parts;
    for (ir::Value* v : entries) parts.push_back(e.Op("Unsqueeze", {v}, {GradAttr::Ints("axes", {0})}));
    results.push_back(parts.size() == 1 ? parts[0] : e.Op("Concat", parts, {GradAttr::Int("axis", 0)}));
  }
  e.Replace(results);
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
    {"ai.onnx.preview", "FlexAttention", 1, INT_MAX, ExpandFlexAttention},
    {"", "RMSNormalization", 23, INT_MAX, ExpandRmsNormalization},
    {"", "RotaryEmbedding", 23, INT_MAX, ExpandRotaryEmbedding},
    {"", "Swish", 24, INT_MAX, ExpandSwish},
    {"", "CausalConvWithState", 27, INT_MAX, ExpandCausalConvWithState},
    {"", "Scan", 8, 8, ExpandScan8},
    {"", "BatchNormalization", 14, INT_MAX, ExpandBatchNormTraining},
};

}  // namespace

ExpandFn FindExpander(const std::string& domain, const std::string& op_type, int64_t opset) {
  for (const ExpandDef& d : kExpanders)
    if (op_type == d.op_type && domain == d.domain && opset >= d.min_opset && opset <= d.max_opset) return d.fn;
  return nullptr;
}

}  // namespace precis::ops
