// Loops that carry sequences (see sequences.h): unrolled when their trip count is known, or kept
// with their list appends as scan outputs and the sequence after them stacked; and the operators
// that read such a stacked sequence.
#include <algorithm>
#include <set>
#include <unordered_map>

#include "passes/match.h"
#include "passes/sequences_common.h"

namespace precis::passes::seq {
namespace {

using ops::GradAttr;

// The body value a Loop's condition output comes from, through Identity nodes.
const ir::Value* ThroughIdentities(const ir::Value* v) {
  while (v && v->kind() == ir::Value::Kind::kNodeOutput && v->producer() && v->producer()->op_type() == "Identity" &&
         v->producer()->domain().empty() && !v->producer()->inputs().empty())
    v = v->producer()->inputs()[0];
  return v;
}

bool IsConstantTrue(const ir::Value* v) {
  const ir::Tensor* t = v && v->is_constant() ? v->data() : nullptr;
  return t && t->has_data() && t->NumElements() == 1 && (t->dtype() == ir::DType::kBool || t->dtype() == ir::DType::kU8) && t->buffer().data()[0] != 0;
}

// A Loop that carries a sequence (or optional) is unrolled: one copy of its body per iteration,
// which needs a trip count known when compiling and a condition that stays true.
constexpr int64_t kMaxUnrolledIterations = 1024;

// A Loop that cannot be unrolled (its trip count or condition known only at run time) whose
// carried sequences only grow at their end: each is read in the body by one SequenceInsert
// without a position, whose result is the carried output and read by nothing else. Such a
// sequence is the elements it started with followed by one element per iteration, so the
// inserted tensor becomes a scan output of the Loop and the sequence after the loop is kept
// stacked (ir::Value::stacked): the initial elements and the scan output concatenated along a
// new axis 0. Returns false (nothing changed) where the body does anything else with one.
StatusOr<bool> AppendsAsScanOutputs(ir::Graph& g, ir::Node& node, int64_t opset) {
  ir::Attribute* attr = nullptr;
  for (ir::Attribute& a : node.mutable_attributes())
    if (a.name == "body" && a.graphs.size() == 1) attr = &a;
  if (!attr) return false;
  ir::Graph& body = *attr->graphs[0];
  size_t carried = node.inputs().size() - 2;
  struct Append {
    size_t j;             // carried index
    ir::Node* insert;     // the body's SequenceInsert
  };
  std::vector<Append> appends;
  for (size_t j = 0; j < carried; ++j) {
    const ir::Value* init = node.inputs()[j + 2];
    if (!init || !IsContainer(init)) continue;
    if (!init->elements() || init->type().kind() != ir::Type::Kind::kSequence) return false;
    for (ir::Value* v : *init->elements())
      if (!v->type().is_tensor()) return false;
    ir::Value* in = body.inputs()[j + 2];
    ir::Value* out = body.outputs()[j + 1];
    if (in->uses().size() != 1 || !out->producer() || !out->uses().empty()) return false;
    ir::Node* insert = out->producer();
    if (insert != in->uses()[0].node || insert->op_type() != "SequenceInsert" || !insert->domain().empty() || insert->owner() != &body ||
        in->uses()[0].input_index != 0 || insert->inputs().size() < 2 || !insert->inputs()[1] ||
        (insert->inputs().size() > 2 && insert->inputs()[2]))
      return false;
    if (std::count(body.outputs().begin(), body.outputs().end(), out) != 1) return false;
    appends.push_back({j, insert});
  }
  if (appends.empty()) return false;
  // The body: each appended tensor becomes a new scan output (after the existing ones); the
  // sequence's carried input and output go away.
  std::vector<ir::Value*> outputs = body.outputs();
  std::vector<ir::Value*> scanned;
  std::set<size_t> dropped;
  for (const Append& a : appends) {
    scanned.push_back(a.insert->inputs()[1]);
    dropped.insert(a.j);
  }
  std::vector<ir::Value*> new_outputs{outputs[0]};
  for (size_t j = 0; j < carried; ++j)
    if (!dropped.count(j)) new_outputs.push_back(outputs[j + 1]);
  for (size_t k = carried + 1; k < outputs.size(); ++k) new_outputs.push_back(outputs[k]);
  for (ir::Value* t : scanned) new_outputs.push_back(t);
  body.SetOutputs(new_outputs);
  for (const Append& a : appends) body.RemoveNode(a.insert);
  std::vector<ir::Value*> body_inputs = body.inputs();
  for (const Append& a : appends) {
    body.ReplaceInput(body_inputs[a.j + 2], {});
    body.RemoveOrphanValue(body_inputs[a.j + 2]);
  }
  // The node: a new Loop with the sequences' inputs left out and the new scan outputs added.
  ops::Expander e(g, node, opset);
  std::vector<ir::Value*> inputs{node.inputs()[0], node.inputs()[1]};
  std::vector<ir::Value*> loop_outputs;
  std::vector<ir::Value*> results(node.outputs().size(), nullptr);
  const std::string base = node.name().empty() ? "Loop" : node.name();
  for (size_t j = 0; j < carried; ++j) {
    if (dropped.count(j)) continue;
    inputs.push_back(node.inputs()[j + 2]);
    loop_outputs.push_back(g.NewValue(match::FreshName(g, base + "_carried")));
    results[j] = loop_outputs.back();
  }
  for (size_t k = carried; k < node.outputs().size(); ++k) {
    loop_outputs.push_back(g.NewValue(match::FreshName(g, base + "_scan")));
    results[k] = loop_outputs.back();
  }
  std::vector<ir::Value*> stacks;
  for (size_t i = 0; i < appends.size(); ++i) {
    loop_outputs.push_back(g.NewValue(match::FreshName(g, base + "_appended")));
    stacks.push_back(loop_outputs.back());
  }
  // A list that starts empty may grow by elements whose shape follows the iteration number:
  // the Loop also gives each element's dims (its attribute scan_dims_outputs; ops/control_flow.h),
  // used where the elements turn out to differ (PaddedDims).
  size_t existing_scans = node.outputs().size() - carried;
  std::vector<int64_t> dims_outputs(existing_scans, -1);
  std::vector<ir::Value*> element_dims(appends.size(), nullptr);
  for (size_t i = 0; i < appends.size(); ++i) {
    if (!node.inputs()[appends[i].j + 2]->elements()->empty()) {
      dims_outputs.push_back(-1);
      continue;
    }
    dims_outputs.push_back(int64_t(loop_outputs.size()));
    loop_outputs.push_back(g.NewValue(match::FreshName(g, base + "_appended_dims")));
    element_dims[i] = loop_outputs.back();
  }
  std::vector<ir::Attribute> attributes = std::move(node.mutable_attributes());
  node.mutable_attributes().clear();
  if (std::any_of(dims_outputs.begin(), dims_outputs.end(), [](int64_t o) { return o >= 0; })) {
    ir::Attribute a;
    a.name = "scan_dims_outputs";
    a.kind = ir::Attribute::Kind::kInts;
    a.ints = dims_outputs;
    attributes.push_back(std::move(a));
  }
  g.AddNode(node.domain(), "Loop", node.name(), inputs, loop_outputs, std::move(attributes));
  // Each sequence after the loop: its initial elements, then one per iteration.
  std::vector<ir::Value*> sequences;
  for (size_t i = 0; i < appends.size(); ++i) {
    const ir::Value* init = node.inputs()[appends[i].j + 2];
    std::vector<ir::Value*> parts;
    for (ir::Value* v : *init->elements()) parts.push_back(AxesOp(e, "Unsqueeze", v, {0}));
    parts.push_back(stacks[i]);
    ir::Value* stacked = parts.size() == 1 ? parts[0] : e.Op("Concat", parts, {GradAttr::Int("axis", 0)});
    ir::Value* seq = g.NewValue(match::FreshName(g, base + "_sequence"));
    seq->set_type(init->type());
    seq->set_stacked(stacked);
    seq->set_stacked_dims(element_dims[i]);
    results[appends[i].j] = seq;
  }
  e.Replace(results);
  return true;
}

}  // namespace

ir::Value* PaddedDims(ir::Value& seq) {
  ir::Value* dims = seq.stacked_dims();
  const ir::Node* loop = dims ? dims->producer() : nullptr;
  const ir::Attribute* a = loop && loop->op_type() == "Loop" ? loop->FindAttribute("scan_dims_outputs") : nullptr;
  if (!a) return dims;
  // The scan output whose elements' dims `dims` holds: padded where its type differs from the
  // body's slice (ops::InferLoop pads it to the last iteration's element).
  const ir::Attribute* body = loop->FindAttribute("body");
  size_t carried = loop->inputs().size() - 2;
  for (size_t s = 0; s < a->ints.size(); ++s) {
    if (a->ints[s] != int64_t(dims->output_index()) || !body || body->graphs.size() != 1) continue;
    const ir::Value* slice = body->graphs[0]->outputs()[1 + carried + s];
    const ir::Value* stack = loop->outputs()[carried + s];
    std::vector<ir::Dim> element;
    if (stack->type().is_tensor() && stack->type().shape().has_rank())
      element.assign(stack->type().shape().dims().begin() + 1, stack->type().shape().dims().end());
    if (slice->type().is_tensor() && slice->type().shape().has_rank() && slice->type().shape().dims() == element) {
      seq.set_stacked_dims(nullptr);  // every element has one shape
      return nullptr;
    }
  }
  return dims;
}

StatusOr<bool> UnrollLoop(ir::Graph& g, ir::Node& node, int64_t opset, bool* loop_kept) {
  const ir::Attribute* a = node.FindAttribute("body");
  if (!a || a->graphs.size() != 1) return InvalidArgument(node.Describe() + ": has no body");
  const ir::Graph& body = *a->graphs[0];
  size_t carried = node.inputs().size() < 2 ? 0 : node.inputs().size() - 2;
  if (body.inputs().size() != carried + 2 || body.outputs().size() < carried + 1)
    return InvalidArgument(node.Describe() + ": its body does not match its inputs");
  size_t scans = body.outputs().size() - 1 - carried;
  if (node.outputs().size() != carried + scans) return InvalidArgument(node.Describe() + ": its outputs do not match its body");
  const std::string why = "carries a sequence, so Precis unrolls it when it compiles, ";
  auto trips_known = node.inputs()[0] ? ConstantInt(node, 0, "the trip count M") : StatusOr<int64_t>(InvalidArgument("no M"));
  bool unrollable = trips_known.ok() && *trips_known <= kMaxUnrolledIterations && (!node.inputs()[1] || IsConstantTrue(node.inputs()[1])) &&
                    (ThroughIdentities(body.outputs()[0]) == body.inputs()[1] || IsConstantTrue(ThroughIdentities(body.outputs()[0])));
  if (!unrollable) {
    PRECIS_ASSIGN_OR_RETURN(bool rewritten, AppendsAsScanOutputs(g, node, opset));
    if (rewritten && loop_kept) *loop_kept = true;
    if (rewritten) return true;
    if (!trips_known.ok() && node.inputs()[0])
      return Refuse(node, "its body does more with a carried sequence than append to it (a Loop of a run-time trip count is kept where "
                          "each carried sequence is read only by one SequenceInsert at its end), so Precis unrolls it when it compiles, "
                          "which needs the trip count M ('" + node.inputs()[0]->name() + "'), computed at run time here");
  }
  if (!node.inputs()[0]) return Refuse(node, why + "which needs a trip count (M is absent)");
  PRECIS_ASSIGN_OR_RETURN(int64_t trips, ConstantInt(node, 0, "the trip count M (the loop carries a sequence, so Precis unrolls it)"));
  if (trips < 0) trips = 0;
  if (trips > kMaxUnrolledIterations)
    return Refuse(node, why + "up to " + std::to_string(kMaxUnrolledIterations) + " iterations (M is " + std::to_string(trips) + ")");
  if (node.inputs()[1] && !IsConstantTrue(node.inputs()[1])) return Refuse(node, why + "which needs its condition to be true");
  const ir::Value* cond_out = ThroughIdentities(body.outputs()[0]);
  if (cond_out != body.inputs()[1] && !IsConstantTrue(cond_out))
    return Refuse(node, why + "which needs the body to pass its condition on unchanged (or give true)");
  if (trips == 0 && scans > 0) return Refuse(node, why + "and its scan outputs would be empty (M is 0)");
  ops::Expander e(g, node, opset);
  std::string prefix = (node.name().empty() ? "Loop" : node.name()) + "/";
  std::vector<ir::Value*> state(node.inputs().begin() + 2, node.inputs().end());
  std::vector<std::vector<ir::Value*>> scanned(scans);
  ir::Value* truth = ScalarConstant(g, prefix + "cond", ir::DType::kBool, 1);
  for (int64_t k = 0; k < trips; ++k) {
    std::unordered_map<const ir::Value*, ir::Value*> map;
    map[body.inputs()[0]] = ScalarConstant(g, prefix + "iteration", ir::DType::kI64, k);
    map[body.inputs()[1]] = truth;
    for (size_t j = 0; j < carried; ++j) map[body.inputs()[j + 2]] = state[j];
    PRECIS_RETURN_IF_ERROR(SpliceBody(g, body, prefix + std::to_string(k) + "/", map));
    for (size_t j = 0; j < carried; ++j) state[j] = Mapped(map, body.outputs()[j + 1]);
    for (size_t j = 0; j < scans; ++j) scanned[j].push_back(Mapped(map, body.outputs()[carried + 1 + j]));
  }
  std::vector<ir::Value*> results = state;
  for (size_t j = 0; j < scans; ++j) {
    std::vector<ir::Value*> parts;
    for (ir::Value* v : scanned[j]) parts.push_back(AxesOp(e, "Unsqueeze", v, {0}));
    results.push_back(parts.size() == 1 ? parts[0] : e.Op("Concat", parts, {GradAttr::Int("axis", 0)}));
  }
  e.Replace(results);
  return true;
}

// A node reading a stacked sequence (ir::Value::stacked: its elements are the slices of one
// tensor along axis 0, their number known only at run time).
StatusOr<bool> ReadStacked(ir::Graph& g, ir::Node& node, int64_t opset) {
  const std::string& op = node.op_type();
  ir::Value* seq = node.inputs()[0];
  if (seq) PaddedDims(*seq);
  ir::Value* stack = seq ? seq->stacked() : nullptr;
  // Only input 0 may be the stacked sequence, and no other input a resolved one.
  for (size_t i = stack ? 1 : 0; i < node.inputs().size(); ++i)
    if (const ir::Value* v = node.inputs()[i]; v && v->resolved_container())
      return Refuse(node, "reads a sequence built by a Loop of a run-time trip count ('" + v->name() +
                              "'), which Precis keeps as one tensor: ConcatFromSequence, SequenceAt, SequenceLength and SequenceInsert at its end "
                              "read it as their first input");
  if (op == "Identity" || op == "OptionalGetElement") {
    if (ir::Value* out = node.outputs().empty() ? nullptr : node.outputs()[0]) {
      out->set_type(seq->type());
      out->set_stacked(stack);
      out->set_stacked_dims(seq->stacked_dims());
    }
    g.DetachNode(&node);
    return true;
  }
  if (seq->stacked_dims() && op != "SequenceLength")
    return Refuse(node, "reads '" + seq->name() + "', a sequence of a run-time length whose elements differ in shape (SplitToSequence's last chunk), "
                        "which Precis keeps as one padded tensor: SequenceLength reads it, and a graph output of it gives its elements");
  ops::Expander e(g, node, opset);
  if (op == "SequenceLength") {
    e.Replace({e.Op("Gather", {e.Op("Shape", {stack}), ScalarConstant(g, node.name() + "_axis", ir::DType::kI64, 0)}, {GradAttr::Int("axis", 0)})});
    return true;
  }
  if (op == "SequenceAt") {  // Gather checks the position against the length when the plan runs
    if (node.inputs().size() < 2 || !node.inputs()[1]) return e.Error("the position is missing");
    e.Replace({e.Op("Gather", {stack, e.Op("Reshape", {e.CastTo(node.inputs()[1], ir::DType::kI64), e.Int64s({})})}, {GradAttr::Int("axis", 0)})});
    return true;
  }
  if (op == "SequenceInsert" && (node.inputs().size() < 3 || !node.inputs()[2]) && node.inputs().size() > 1 && node.inputs()[1]) {
    ir::Value* grown = e.Op("Concat", {stack, AxesOp(e, "Unsqueeze", node.inputs()[1], {0})}, {GradAttr::Int("axis", 0)});
    e.KeepNode();
    ir::Value* out = node.outputs().empty() ? nullptr : node.outputs()[0];
    if (out) {
      out->set_type(seq->type());
      out->set_stacked(grown);
    }
    g.DetachNode(&node);
    return true;
  }
  if (op == "ConcatFromSequence") {
    if (!stack->type().is_tensor() || !stack->type().shape().has_rank()) return e.Unsupported("its elements have no known rank");
    int64_t rank = stack->type().shape().rank() - 1, axis = e.Int("axis", 0);  // the elements' rank
    bool new_axis = e.Int("new_axis", 0) != 0;
    int64_t out_rank = new_axis ? rank + 1 : rank;
    if (axis < -out_rank || axis >= out_rank) return e.Error("axis " + std::to_string(axis) + " is outside rank " + std::to_string(out_rank));
    if (axis < 0) axis += out_rank;
    // The stack's axis 0 moved to `axis`; without a new axis, merged with the element axis after it.
    std::vector<int64_t> perm;
    for (int64_t d = 1; d <= rank; ++d) {
      if (d - 1 == axis) perm.push_back(0);
      perm.push_back(d);
    }
    if (axis == rank) perm.push_back(0);
    ir::Value* moved = axis == 0 ? stack : e.Op("Transpose", {stack}, {GradAttr::Ints("perm", perm)});
    if (new_axis) {
      e.Replace({moved});
      return true;
    }
    ir::Value* shape = e.Op("Concat", {e.ShapeOf(moved, 0, axis), e.Int64s({-1}), e.ShapeOf(moved, axis + 2, rank + 1)}, {GradAttr::Int("axis", 0)});
    e.Replace({e.Op("Reshape", {moved, shape})});
    return true;
  }
  return Refuse(node, "reads '" + seq->name() +
                          "', a sequence built by a Loop of a run-time trip count, which Precis keeps as one tensor: ConcatFromSequence, "
                          "SequenceAt, SequenceLength and SequenceInsert at its end read it");
}

}  // namespace precis::passes::seq
