// Sequences and optionals resolved at compile time (see sequences.h); Loops carrying them and
// stacked sequences are in sequence_loops.cc.
#include "passes/sequences.h"

#include <algorithm>
#include <cstring>
#include <set>
#include <unordered_map>

#include "compiler/ir/text.h"
#include "compiler/ops/expand.h"
#include "passes/match.h"
#include "passes/sequences_common.h"
#include "passes/specialize_inputs.h"

namespace precis::passes {
namespace seq {

using ops::GradAttr;

const std::set<std::string>& SequenceOps() {
  static const std::set<std::string> ops = {"SequenceEmpty", "SequenceConstruct", "SequenceInsert", "SequenceErase", "SequenceAt",
                                            "SequenceLength", "SplitToSequence", "ConcatFromSequence", "SequenceMap", "Optional",
                                            "OptionalHasElement", "OptionalGetElement"};
  return ops;
}

bool IsContainer(const ir::Value* v) {
  return v && (v->elements() || v->type().kind() == ir::Type::Kind::kSequence || v->type().kind() == ir::Type::Kind::kOptional);
}

Status Refuse(const ir::Node& node, const std::string& why) { return Unimplemented(node.Describe() + ": " + why); }

// The elements of input i, which must be a sequence the compiler resolved.
StatusOr<std::vector<ir::Value*>> Elements(const ir::Node& node, size_t i) {
  const ir::Value* v = i < node.inputs().size() ? node.inputs()[i] : nullptr;
  if (!v) return InvalidArgument(node.Describe() + ": input " + std::to_string(i) + " is missing");
  if (!v->elements())
    return Refuse(node, "input " + std::to_string(i) + " ('" + v->name() + "') is " +
                            (v->type().is_tensor() ? "a tensor, not a sequence"
                                                   : "a sequence computed at run time (Precis resolves sequences when it compiles: "
                                                     "their lengths and positions must be known then)"));
  return *v->elements();
}

// A constant integer scalar (or one-element tensor), or an error naming what it is for.
StatusOr<int64_t> ConstantInt(const ir::Node& node, size_t i, const std::string& what) {
  const ir::Value* v = i < node.inputs().size() ? node.inputs()[i] : nullptr;
  if (!v) return InvalidArgument(node.Describe() + ": " + what + " is missing");
  if (const auto* known = v->known_values(); known && known->size() == 1 && (*known)[0].is_constant()) return (*known)[0].constant();
  const ir::Tensor* t = v->is_constant() ? v->data() : nullptr;
  if (!t || !t->has_data() || t->NumElements() != 1 || (t->dtype() != ir::DType::kI64 && t->dtype() != ir::DType::kI32))
    return Refuse(node, what + " ('" + v->name() + "') is computed at run time; Precis resolves sequences when it compiles");
  if (t->dtype() == ir::DType::kI32) {
    int32_t x;
    std::memcpy(&x, t->buffer().data(), 4);
    return int64_t(x);
  }
  int64_t x;
  std::memcpy(&x, t->buffer().data(), 8);
  return x;
}

// A position in [-n, n - 1] (or [-n, n] for an insertion), made non-negative.
StatusOr<int64_t> Position(const ir::Node& node, int64_t pos, int64_t n, bool insert) {
  int64_t hi = insert ? n : n - 1;
  if (pos < -n || pos > hi)
    return InvalidArgument(node.Describe() + ": position " + std::to_string(pos) + " is outside a sequence of " + std::to_string(n) + " elements");
  return pos < 0 ? pos + n : pos;
}

ir::Type SequenceOf(const std::vector<ir::Value*>& elements, ir::DType fallback) {
  if (!elements.empty()) return ir::Type::Sequence(elements[0]->type());
  return ir::Type::Sequence(ir::Type::Tensor(fallback, ir::Shape()));
}

// The node's output 0 is the resolved container `elements`; the node goes away.
bool Detach(ir::Graph& g, ir::Node& node, std::vector<ir::Value*> elements, ir::Type type) {
  if (ir::Value* out = node.outputs().empty() ? nullptr : node.outputs()[0]) {
    out->set_type(std::move(type));
    out->set_elements(std::move(elements));
  }
  g.DetachNode(&node);
  return true;
}

ir::Value* ScalarConstant(ir::Graph& g, const std::string& base, ir::DType dtype, int64_t value) {
  std::vector<uint8_t> bytes(size_t(ir::DTypeSize(dtype)));
  if (dtype == ir::DType::kBool) bytes[0] = value != 0;
  else std::memcpy(bytes.data(), &value, 8);
  return g.AddConstant(match::FreshName(g, base), ir::Tensor(dtype, {}, ir::Buffer::Own(std::move(bytes))));
}

// Squeeze/Unsqueeze over constant axes in the form of the model's opset (an input from 13 on).
ir::Value* AxesOp(ops::Expander& e, const char* op, ir::Value* x, std::vector<int64_t> axes) {
  if (e.opset() >= 13) return e.Op(op, {x, e.Int64s(axes)});
  return e.Op(op, {x}, {GradAttr::Ints("axes", std::move(axes))});
}

// Copies `body`'s constants and nodes (with their own subgraphs) to the end of `g`; `map` takes
// body values to their copies (the caller maps the body's inputs). Names start with `prefix`.
Status SpliceBody(ir::Graph& g, const ir::Graph& body, const std::string& prefix, std::unordered_map<const ir::Value*, ir::Value*>& map) {
  ir::CopyNodes(g, body, map, [](ir::Value* v) { return v; }, [&](const std::string& name) { return match::FreshName(g, prefix + name); },
                /*untyped=*/true);
  return Status::Ok();
}

ir::Value* Mapped(const std::unordered_map<const ir::Value*, ir::Value*>& map, ir::Value* v) {
  auto it = map.find(v);
  return it == map.end() ? v : it->second;
}

}  // namespace seq

namespace {

using ops::GradAttr;
using namespace seq;

// Sequence operators whose position is computed at run time, over elements of static shapes:
// the elements are stacked and each result is a Gather of the stack, whose index is computed from
// the position. Gather's own range check refuses a position outside the sequence when the plan
// runs (ONNX's range: [-n, n - 1] to read or erase, [-n, n] to insert). Elements of one rank but
// different shapes are padded to the largest shape for the stack, and each result is sliced back
// to its element's shape: its dims are then expressions over the position's value (a Where over
// the candidates' dims), which the plan computes from the input when it runs.
StatusOr<bool> RuntimePosition(ir::Graph& g, ir::Node& node, int64_t opset, std::vector<ir::Value*> el, size_t pos_input) {
  const std::string& op = node.op_type();
  ir::Value* inserted = op == "SequenceInsert" ? node.inputs()[1] : nullptr;
  std::vector<ir::Value*> all = el;
  if (inserted) all.push_back(inserted);
  if (all.empty()) return InvalidArgument(node.Describe() + ": the sequence is empty");
  const ir::Type& first = all[0]->type();
  bool same = true;
  for (const ir::Value* v : all) {
    if (!v->type().is_tensor() || !v->type().shape().is_static() || v->type().dtype() != first.dtype() ||
        v->type().shape().rank() != first.shape().rank())
      return Refuse(node, "the position ('" + node.inputs()[pos_input]->name() +
                              "') is computed at run time, which Precis supports over elements of static shapes of one rank only");
    same &= v->type() == first;
  }
  ops::Expander e(g, node, opset);
  int64_t n = int64_t(el.size());
  size_t rank = size_t(first.shape().rank());
  std::vector<int64_t> largest(rank, 0);
  for (const ir::Value* v : all)
    for (size_t d = 0; d < rank; ++d) largest[d] = std::max(largest[d], v->type().shape().dims()[d].value());
  std::vector<ir::Value*> parts;
  for (ir::Value* v : all) {
    ir::Value* x = v;
    if (!same) {
      std::vector<int64_t> pads(2 * rank, 0);
      for (size_t d = 0; d < rank; ++d) pads[rank + d] = largest[d] - v->type().shape().dims()[d].value();
      x = e.Op("Pad", {v, e.Int64s(pads)});
    }
    parts.push_back(AxesOp(e, "Unsqueeze", x, {0}));
  }
  ir::Value* stack = parts.size() == 1 ? parts[0] : e.Op("Concat", parts, {GradAttr::Int("axis", 0)});
  ir::Value* p = e.Op("Reshape", {e.CastTo(node.inputs()[pos_input], ir::DType::kI64), e.Int64s({})});
  auto i64 = [&](int64_t v) { return ScalarConstant(g, node.name() + "_index", ir::DType::kI64, v); };
  // Element `index` of the stack as the element it is: for elements of different shapes, the
  // padded row sliced to the dims of the candidate the index selects (the index unchecked here:
  // the Gather of the data checks it).
  auto element = [&](ir::Value* index, ir::Value* unchecked) -> ir::Value* {
    ir::Value* row = e.Op("Gather", {stack, index}, {GradAttr::Int("axis", 0)});
    if (same) return row;
    ir::Value* ends = nullptr;
    for (size_t j = all.size(); j-- > 0;) {
      std::vector<int64_t> dims;
      for (const ir::Dim& d : all[j]->type().shape().dims()) dims.push_back(d.value());
      ends = ends ? e.Op("Where", {e.Op("Equal", {unchecked, i64(int64_t(j))}), e.Int64s(dims), ends}) : e.Int64s(dims);
    }
    return e.Op("Slice", {row, e.Int64s(std::vector<int64_t>(rank, 0)), ends});
  };
  if (op == "SequenceAt") {
    e.Replace({element(p, same ? nullptr : e.Op("Where", {e.Op("Less", {p, i64(0)}), e.Op("Add", {p, i64(n)}), p}))});
    return true;
  }
  // The position checked (a Gather from ones, which fails out of range) and made non-negative.
  auto ones = [&](int64_t count) { return e.Op("Expand", {i64(1), e.Int64s({count})}); };
  ir::Value* check = inserted ? e.Op("Mul", {e.Op("Gather", {ones(n + 1), p}), e.Op("Gather", {ones(n + 1), e.Op("Neg", {p})})})
                              : e.Op("Gather", {ones(n), p});
  ir::Value* unchecked_pn = e.Op("Where", {e.Op("Less", {p, i64(0)}), e.Op("Add", {p, i64(n)}), p});
  ir::Value* pn = e.Op("Mul", {unchecked_pn, check});
  std::vector<ir::Value*> result;
  int64_t count = inserted ? n + 1 : n - 1;
  for (int64_t k = 0; k < count; ++k) {
    auto index_from = [&](ir::Value* at) {
      ir::Value* before = e.Op("Less", {i64(k), at});
      return inserted ? e.Op("Where", {before, i64(k), e.Op("Where", {e.Op("Equal", {i64(k), at}), i64(n), i64(k - 1)})})
                      : e.Op("Where", {before, i64(k), i64(k + 1)});
    };
    result.push_back(element(index_from(pn), same ? nullptr : index_from(unchecked_pn)));
  }
  e.KeepNode();
  return Detach(g, node, result, ir::Type::Sequence(same ? first : ir::Type::Tensor(first.dtype(), ir::Shape())));
}

// SplitToSequence into chunks of a scalar length s along `axis` when the chunk count
// n = ceil(D / s) is decided at run time (s an input, or D symbolic): the sequence is one stack
// [n, ...] padded with zeros to n * s along the axis, and a dims matrix [n, rank] whose rows are
// the chunks' dims (the last chunk is shorter where s does not divide D).
StatusOr<bool> RuntimeChunks(ir::Graph& g, ir::Node& node, ops::Expander& e, int64_t axis, int64_t rank) {
  ir::Value* x = e.in(0);
  auto scalar = [&](ir::Value* v) { return e.Op("Reshape", {v, e.Int64s({})}); };
  auto slice = [&](ir::Value* v, int64_t from, int64_t to) { return e.Op("Slice", {v, e.Int64s({from}), e.Int64s({to}), e.Int64s({0})}); };
  ir::Value* s = e.Op("Reshape", {e.CastTo(e.in(1), ir::DType::kI64), e.Int64s({1})});
  ir::Value* shape = e.Op("Shape", {x});
  ir::Value* d = slice(shape, axis, axis + 1);
  ir::Value* starts = e.Op("Range", {ScalarConstant(g, node.name() + "_zero", ir::DType::kI64, 0), scalar(d), scalar(s)});
  ir::Value* n = e.Op("Shape", {starts});
  std::vector<ir::Value*> pads;
  if (rank + axis > 0) pads.push_back(e.Int64s(std::vector<int64_t>(size_t(rank + axis), 0)));
  pads.push_back(e.Op("Sub", {e.Op("Mul", {n, s}), d}));
  if (rank - axis - 1 > 0) pads.push_back(e.Int64s(std::vector<int64_t>(size_t(rank - axis - 1), 0)));
  ir::Value* padded = e.Op("Pad", {x, e.Op("Concat", pads, {GradAttr::Int("axis", 0)})});
  std::vector<ir::Value*> target;
  if (axis > 0) target.push_back(slice(shape, 0, axis));
  target.push_back(n);
  target.push_back(s);
  if (axis + 1 < rank) target.push_back(slice(shape, axis + 1, rank));
  ir::Value* blocks = e.Op("Reshape", {padded, e.Op("Concat", target, {GradAttr::Int("axis", 0)})});
  std::vector<int64_t> perm{axis};
  for (int64_t k = 0; k <= rank; ++k)
    if (k != axis) perm.push_back(k);
  ir::Value* stack = e.Op("Transpose", {blocks}, {GradAttr::Ints("perm", perm)});
  // Row i: the input's dims with min(s, D - i * s) at the axis.
  ir::Value* lengths = AxesOp(e, "Unsqueeze", e.Op("Min", {s, e.Op("Sub", {d, starts})}), {1});
  ir::Value* rows = e.Op("Expand", {AxesOp(e, "Unsqueeze", shape, {0}), e.Op("Concat", {n, e.Int64s({rank})}, {GradAttr::Int("axis", 0)})});
  std::vector<uint8_t> mask(size_t(rank), 0);
  mask[size_t(axis)] = 1;
  ir::Value* at_axis = g.AddConstant(match::FreshName(g, node.name() + "_axis_mask"), ir::Tensor(ir::DType::kBool, {1, rank}, ir::Buffer::Own(std::move(mask))));
  ir::Value* dims = e.Op("Where", {at_axis, lengths, rows});
  e.KeepNode();
  if (ir::Value* out = node.outputs().empty() ? nullptr : node.outputs()[0]) {
    out->set_type(ir::Type::Sequence(ir::Type::Tensor(x->type().dtype(), ir::Shape())));
    out->set_stacked(stack);
    out->set_stacked_dims(dims);
  }
  g.DetachNode(&node);
  return true;
}

StatusOr<bool> SplitToSequence(ir::Graph& g, ir::Node& node, int64_t opset) {
  ops::Expander e(g, node, opset);
  PRECIS_ASSIGN_OR_RETURN(auto dims, e.InputDims(0));
  int64_t rank = int64_t(dims.size()), axis = e.Int("axis", 0);
  if (axis < -rank || axis >= rank) return e.Error("axis " + std::to_string(axis) + " is outside rank " + std::to_string(rank));
  if (axis < 0) axis += rank;
  {
    // Chunks of one length (a scalar split) whose count is decided when the plan runs.
    ir::Value* split = e.in(1);
    const ir::Type* st = split ? &split->type() : nullptr;
    bool scalar = st && st->is_tensor() && st->shape().rank() == 0;
    if (scalar && (!dims[size_t(axis)].is_static() || !split->is_constant())) return RuntimeChunks(g, node, e, axis, rank);
  }
  if (!dims[size_t(axis)].is_static())
    return e.Unsupported("the split axis has a symbolic size and the split is not one chunk length; Precis fixes a sequence's length when it compiles");
  int64_t size = dims[size_t(axis)].value();
  std::vector<int64_t> lengths;
  bool squeeze = false;
  ir::Value* split = e.in(1);
  if (!split) {
    lengths.assign(size_t(size), 1);
    squeeze = e.Int("keepdims", 1) == 0;
  } else {
    const ir::Tensor* t = split->is_constant() ? split->data() : nullptr;
    const ir::Type& st = split->type();
    if (!t && st.is_tensor() && st.shape().rank() == 1 && st.shape().is_static()) {
      // Lengths given at run time, their count when compiling: one Slice per piece, its bounds
      // the running sum of the lengths (Slice reads them when it runs).
      int64_t count = st.shape().dims()[0].value();
      ir::Value* lengths64 = e.CastTo(split, ir::DType::kI64);
      ir::Value* start = e.Int64s({0});
      std::vector<ir::Value*> pieces;
      for (int64_t k = 0; k < count; ++k) {
        ir::Value* len = e.Op("Slice", {lengths64, e.Int64s({k}), e.Int64s({k + 1}), e.Int64s({0})});
        ir::Value* end = e.Op("Add", {start, len});
        pieces.push_back(e.Op("Slice", {e.in(0), start, end, e.Int64s({axis})}));
        start = end;
      }
      e.KeepNode();
      return Detach(g, node, std::move(pieces), ir::Type::Sequence(ir::Type::Tensor(e.in(0)->type().dtype(), ir::Shape())));
    }
    if (!t || !t->has_data() || (t->dtype() != ir::DType::kI64 && t->dtype() != ir::DType::kI32) || t->dims().size() > 1)
      return e.Unsupported("the split ('" + split->name() + "') is computed at run time and its length is not known; Precis fixes a sequence's length when it compiles");
    std::vector<int64_t> values;
    for (int64_t k = 0; k < t->NumElements(); ++k) {
      if (t->dtype() == ir::DType::kI64) {
        int64_t x;
        std::memcpy(&x, t->buffer().data() + 8 * k, 8);
        values.push_back(x);
      } else {
        int32_t x;
        std::memcpy(&x, t->buffer().data() + 4 * k, 4);
        values.push_back(x);
      }
    }
    if (t->dims().empty()) {
      if (values[0] <= 0) return e.Error("split " + std::to_string(values[0]) + " must be positive");
      for (int64_t at = 0; at < size; at += values[0]) lengths.push_back(std::min(values[0], size - at));
    } else {
      int64_t sum = 0;
      for (int64_t v : values) {
        if (v < 0) return e.Error("a split length is negative");
        sum += v;
      }
      if (sum != size) return e.Error("split lengths sum to " + std::to_string(sum) + ", the axis has " + std::to_string(size));
      lengths = values;
    }
  }
  std::vector<ir::Value*> pieces;
  int64_t at = 0;
  for (int64_t len : lengths) {
    ir::Value* piece = e.Op("Slice", {e.in(0), e.Int64s({at}), e.Int64s({at + len}), e.Int64s({axis})});
    if (squeeze) piece = AxesOp(e, "Squeeze", piece, {axis});
    pieces.push_back(piece);
    at += len;
  }
  e.KeepNode();
  ir::Type element = ir::Type::Tensor(e.in(0)->type().dtype(), ir::Shape());
  return Detach(g, node, std::move(pieces), ir::Type::Sequence(element));
}

StatusOr<bool> ConcatFromSequence(ir::Graph& g, ir::Node& node, int64_t opset) {
  PRECIS_ASSIGN_OR_RETURN(auto elements, Elements(node, 0));
  ops::Expander e(g, node, opset);
  if (elements.empty()) return e.Error("the sequence is empty");
  if (!elements[0]->type().is_tensor() || !elements[0]->type().shape().has_rank()) return e.Unsupported("its elements have no known rank");
  int64_t rank = elements[0]->type().shape().rank(), axis = e.Int("axis", 0);
  bool stack = e.Int("new_axis", 0) != 0;
  int64_t out_rank = stack ? rank + 1 : rank;
  if (axis < -out_rank || axis >= out_rank) return e.Error("axis " + std::to_string(axis) + " is outside rank " + std::to_string(out_rank));
  if (axis < 0) axis += out_rank;
  std::vector<ir::Value*> parts;
  for (ir::Value* v : elements) parts.push_back(stack ? AxesOp(e, "Unsqueeze", v, {axis}) : v);
  e.Replace({parts.size() == 1 ? parts[0] : e.Op("Concat", parts, {GradAttr::Int("axis", axis)})});
  return true;
}

// One copy of the body per element, in front of the node.
StatusOr<bool> SequenceMap(ir::Graph& g, ir::Node& node, int64_t opset) {
  const ir::Attribute* a = node.FindAttribute("body");
  if (!a || a->graphs.size() != 1) return InvalidArgument(node.Describe() + ": has no body");
  const ir::Graph& body = *a->graphs[0];
  if (body.inputs().size() != node.inputs().size())
    return InvalidArgument(node.Describe() + ": its body takes " + std::to_string(body.inputs().size()) + " inputs, the node has " +
                           std::to_string(node.inputs().size()));
  if (body.outputs().size() != node.outputs().size())
    return InvalidArgument(node.Describe() + ": its body gives " + std::to_string(body.outputs().size()) + " outputs, the node has " +
                           std::to_string(node.outputs().size()));
  PRECIS_ASSIGN_OR_RETURN(auto first, Elements(node, 0));
  size_t n = first.size();
  std::vector<const std::vector<ir::Value*>*> seqs;
  for (size_t k = 0; k < node.inputs().size(); ++k) {
    const ir::Value* v = node.inputs()[k];
    if (!v) return InvalidArgument(node.Describe() + ": input " + std::to_string(k) + " is missing");
    if (IsContainer(v)) {
      PRECIS_ASSIGN_OR_RETURN(auto el, Elements(node, k));
      if (el.size() != n)
        return InvalidArgument(node.Describe() + ": input sequences have " + std::to_string(n) + " and " + std::to_string(el.size()) + " elements");
      seqs.push_back(v->elements());
    } else {
      seqs.push_back(nullptr);
    }
  }
  ops::Expander e(g, node, opset);  // moves the copies in front of the node
  std::string prefix = (node.name().empty() ? "SequenceMap" : node.name()) + "/";
  std::vector<std::vector<ir::Value*>> results(node.outputs().size());
  for (size_t i = 0; i < n; ++i) {
    std::unordered_map<const ir::Value*, ir::Value*> map;
    for (size_t k = 0; k < body.inputs().size(); ++k) map[body.inputs()[k]] = seqs[k] ? (*seqs[k])[i] : node.inputs()[k];
    PRECIS_RETURN_IF_ERROR(SpliceBody(g, body, prefix + std::to_string(i) + "/", map));
    for (size_t j = 0; j < body.outputs().size(); ++j) results[j].push_back(Mapped(map, body.outputs()[j]));
  }
  e.KeepNode();
  // Every output is a sequence; the node's other outputs become resolved values like output 0.
  for (size_t j = 1; j < node.outputs().size(); ++j)
    if (ir::Value* out = node.outputs()[j]) {
      out->set_type(SequenceOf(results[j], ir::DType::kF32));
      out->set_elements(results[j]);
    }
  ir::Type type = SequenceOf(results.empty() ? std::vector<ir::Value*>{} : results[0], ir::DType::kF32);
  return Detach(g, node, results.empty() ? std::vector<ir::Value*>{} : results[0], type);
}

}  // namespace

bool IsSequenceOperator(const ir::Node& node) { return node.domain().empty() && SequenceOps().count(node.op_type()); }

StatusOr<bool> ResolveSequenceNode(ir::Graph& g, ir::Node& node, int64_t opset, bool* handled, bool* loop_kept) {
  *handled = false;
  const std::string& op = node.op_type();
  bool reads = std::any_of(node.inputs().begin(), node.inputs().end(), [](const ir::Value* v) { return v && v->resolved_container(); });
  if (!node.domain().empty() || (!SequenceOps().count(op) && !reads)) return false;
  *handled = true;
  if (std::any_of(node.inputs().begin(), node.inputs().end(), [](const ir::Value* v) { return v && v->stacked(); }))
    return ReadStacked(g, node, opset);
  if (op == "SequenceEmpty") {
    ir::DType dtype = ir::DType::kF32;
    if (const ir::Attribute* a = node.FindAttribute("dtype")) {
      PRECIS_ASSIGN_OR_RETURN(dtype, ir::DTypeFromOnnx(int32_t(a->i)));
    }
    return Detach(g, node, {}, ir::Type::Sequence(ir::Type::Tensor(dtype, ir::Shape())));
  }
  if (op == "SequenceConstruct") {
    std::vector<ir::Value*> el;
    for (ir::Value* v : node.inputs()) {
      if (!v || !v->type().is_tensor()) return Refuse(node, "takes tensors");
      if (!el.empty() && v->type().dtype() != el[0]->type().dtype()) return InvalidArgument(node.Describe() + ": its inputs differ in dtype");
      el.push_back(v);
    }
    return Detach(g, node, el, SequenceOf(el, ir::DType::kF32));
  }
  if (op == "SequenceInsert" || op == "SequenceErase") {
    PRECIS_ASSIGN_OR_RETURN(auto el, Elements(node, 0));
    bool insert = op == "SequenceInsert";
    size_t pos_input = insert ? 2 : 1;
    int64_t n = int64_t(el.size());
    int64_t pos = insert ? n : n - 1;
    if (pos_input < node.inputs().size() && node.inputs()[pos_input]) {
      auto given = ConstantInt(node, pos_input, "the position");
      if (!given.ok()) return RuntimePosition(g, node, opset, el, pos_input);
      pos = *given;
    }
    if (!insert && n == 0) return InvalidArgument(node.Describe() + ": erases from an empty sequence");
    PRECIS_ASSIGN_OR_RETURN(pos, Position(node, pos, n, insert));
    if (insert) {
      ir::Value* t = node.inputs().size() > 1 ? node.inputs()[1] : nullptr;
      if (!t || !t->type().is_tensor()) return InvalidArgument(node.Describe() + ": inserts a tensor");
      el.insert(el.begin() + pos, t);
    } else {
      el.erase(el.begin() + pos);
    }
    ir::DType dtype = node.inputs()[0]->type().kind() == ir::Type::Kind::kSequence ? node.inputs()[0]->type().element().dtype() : ir::DType::kF32;
    return Detach(g, node, el, SequenceOf(el, dtype));
  }
  if (op == "SequenceAt") {
    PRECIS_ASSIGN_OR_RETURN(auto el, Elements(node, 0));
    auto given = ConstantInt(node, 1, "the position");
    if (!given.ok()) return RuntimePosition(g, node, opset, el, 1);
    PRECIS_ASSIGN_OR_RETURN(int64_t pos, Position(node, *given, int64_t(el.size()), false));
    ops::Expander e(g, node, opset);
    e.Replace({el[size_t(pos)]});
    return true;
  }
  if (op == "SequenceLength") {
    PRECIS_ASSIGN_OR_RETURN(auto el, Elements(node, 0));
    ops::Expander e(g, node, opset);
    e.Replace({ScalarConstant(g, node.name() + "_length", ir::DType::kI64, int64_t(el.size()))});
    return true;
  }
  if (op == "SplitToSequence") return SplitToSequence(g, node, opset);
  if (op == "ConcatFromSequence") return ConcatFromSequence(g, node, opset);
  if (op == "SequenceMap") return SequenceMap(g, node, opset);
  if (op == "Optional") {
    ir::Value* v = node.inputs().empty() ? nullptr : node.inputs()[0];
    ir::Type element = v ? v->type() : ir::Type();
    if (!v)
      if (const ir::Attribute* a = node.FindAttribute("type")) element = a->type;
    return Detach(g, node, v ? std::vector<ir::Value*>{v} : std::vector<ir::Value*>{}, ir::Type::Optional(element));
  }
  if (std::any_of(node.inputs().begin(), node.inputs().end(), [](const ir::Value* v) { return v && v->present(); })) {
    ir::Value* v = node.inputs()[0];
    if (op != "OptionalHasElement" || !v || !v->present())
      return Refuse(node, "reads an optional whose presence is decided at run time (an If gives it in one branch only); Precis takes such "
                          "an optional as a graph output or in OptionalHasElement");
    ops::Expander e(g, node, opset);
    e.Replace({v->present()});
    return true;
  }
  if (op == "OptionalHasElement") {
    ir::Value* v = node.inputs().empty() ? nullptr : node.inputs()[0];
    if (v && IsContainer(v) && !v->elements()) return Elements(node, 0).status();  // an optional computed at run time
    bool has = v && (!v->elements() || !v->elements()->empty() || v->type().kind() == ir::Type::Kind::kSequence);
    ops::Expander e(g, node, opset);
    e.Replace({ScalarConstant(g, node.name() + "_has_element", ir::DType::kBool, has)});
    return true;
  }
  if (op == "OptionalGetElement" || op == "Identity") {
    ir::Value* v = node.inputs().empty() ? nullptr : node.inputs()[0];
    if (!v) return InvalidArgument(node.Describe() + ": input 0 is missing");
    if (IsContainer(v) && !v->elements()) return Elements(node, 0).status();  // computed at run time
    bool optional = v->elements() && v->type().kind() == ir::Type::Kind::kOptional;
    if (op == "Identity" || !optional) {  // a sequence passed on, or a tensor (an optional's element, as opset 18 allows)
      if (!v->elements()) {
        ops::Expander e(g, node, opset);
        e.Replace({v});
        return true;
      }
      return Detach(g, node, *v->elements(), v->type());
    }
    if (v->elements()->empty()) return InvalidArgument(node.Describe() + ": the optional '" + v->name() + "' is empty");
    ir::Value* element = (*v->elements())[0];
    if (element->elements()) return Detach(g, node, *element->elements(), element->type());
    ops::Expander e(g, node, opset);
    e.Replace({element});
    return true;
  }
  if (op == "Loop") return UnrollLoop(g, node, opset, loop_kept);
  // Any other operator reading a resolved sequence.
  for (const ir::Value* v : node.inputs())
    if (v && v->elements())
      return Refuse(node, "reads the " + std::string(v->type().kind() == ir::Type::Kind::kOptional ? "optional" : "sequence") + " '" +
                              v->name() + "'; Precis resolves sequences when it compiles" +
                              (op == "Scan" ? ", and a sequence carried through a Scan may change length each iteration"
                                                    : ", and " + op + " does not take them"));
  return false;
}

StatusOr<bool> InlineConstantIf(ir::Graph& g, ir::Node& node, int64_t opset) {
  if (!node.domain().empty() || node.op_type() != "If" || node.inputs().empty() || !node.inputs()[0]) return false;
  const ir::Value* c = node.inputs()[0];
  const ir::Tensor* t = c->is_constant() ? c->data() : nullptr;
  if (!t || !t->has_data() || t->NumElements() != 1 || (t->dtype() != ir::DType::kBool && t->dtype() != ir::DType::kU8)) return false;
  const ir::Attribute* a = node.FindAttribute(t->buffer().data()[0] != 0 ? "then_branch" : "else_branch");
  if (!a || a->graphs.size() != 1) return false;
  const ir::Graph& branch = *a->graphs[0];
  if (branch.outputs().size() != node.outputs().size() || !branch.inputs().empty()) return false;
  ops::Expander e(g, node, opset);
  std::unordered_map<const ir::Value*, ir::Value*> map;
  PRECIS_RETURN_IF_ERROR(SpliceBody(g, branch, (node.name().empty() ? std::string("If") : node.name()) + "/", map));
  std::vector<ir::Value*> results;
  for (ir::Value* v : branch.outputs()) results.push_back(Mapped(map, v));
  e.Replace(results);
  return true;
}

// An If output that is an optional present in one branch only (`absent` the other branch): its
// presence and its tensors (the optional's tensor, or its sequence's elements) as new If outputs,
// appended to each branch's outputs.
struct RuntimeOptional {
  ir::Value* present = nullptr;
  std::vector<ir::Value*> tensors;
  bool sequence = false;
};

StatusOr<RuntimeOptional> PresentInOneBranch(ir::Graph& g, const ir::Node& node, size_t j, ir::Graph* branches[2], int absent,
                                             std::vector<std::vector<ir::Value*>>& body_outputs) {
  ir::Value* given = (*branches[1 - absent]->outputs()[j]->elements())[0];
  RuntimeOptional r;
  std::vector<ir::Value*> tensors{given};
  if (given->stacked() || given->present())
    return Refuse(node, "output " + std::to_string(j) + " is an optional present in one branch only, holding a sequence of a length known only at run time");
  if (given->elements()) {
    r.sequence = true;
    tensors = *given->elements();
  }
  for (const ir::Value* v : tensors)
    if (v->resolved_container() || !v->type().is_tensor() || !v->type().shape().is_static())
      return Refuse(node, "output " + std::to_string(j) + " is an optional present in one branch only whose value '" + v->name() +
                              "' is not a tensor of static shape (the other branch gives zeros of its shape in its place)");
  std::string base = node.outputs()[j] ? node.outputs()[j]->name() : "if_output";
  // Branch b's output: an Identity of `v` (a branch output is a value the branch produces).
  auto give = [&](int b, ir::Value* v) {
    ir::Value* out = branches[b]->NewValue(match::FreshName(*branches[b], v->name() + "/out"));
    out->set_type(v->type());
    branches[b]->AddNode("", "Identity", match::FreshName(*branches[b], "Identity/element"), {v}, {out}, {});
    body_outputs[size_t(b)].push_back(out);
  };
  r.present = g.NewValue(match::FreshName(g, base + "/present"));
  for (int b = 0; b < 2; ++b) give(b, ScalarConstant(*branches[b], base + "_present", ir::DType::kBool, b != absent));
  for (size_t k = 0; k < tensors.size(); ++k) {
    r.tensors.push_back(g.NewValue(match::FreshName(g, base + "/" + std::to_string(k))));
    const ir::Type& type = tensors[k]->type();
    std::vector<int64_t> dims;
    for (const ir::Dim& d : type.shape().dims()) dims.push_back(d.value());
    size_t bytes = size_t(*type.shape().NumElements()) * size_t(ir::DTypeSize(type.dtype()));
    ir::Value* zeros = branches[absent]->AddConstant(match::FreshName(*branches[absent], base + "_absent"),
                                                     ir::Tensor(type.dtype(), dims, ir::Buffer::Own(std::vector<uint8_t>(bytes))));
    for (int b = 0; b < 2; ++b) give(b, b == absent ? zeros : tensors[k]);
  }
  return r;
}

StatusOr<bool> FlattenIfContainers(ir::Graph& g, ir::Node& node) {
  if (!node.domain().empty() || node.op_type() != "If") return false;
  const ir::Attribute* then_a = node.FindAttribute("then_branch");
  const ir::Attribute* else_a = node.FindAttribute("else_branch");
  if (!then_a || !else_a || then_a->graphs.size() != 1 || else_a->graphs.size() != 1) return false;
  ir::Graph* branches[2] = {then_a->graphs[0].get(), else_a->graphs[0].get()};
  size_t outs = node.outputs().size();
  if (branches[0]->outputs().size() != outs || branches[1]->outputs().size() != outs) return false;
  bool any = false;
  for (size_t j = 0; j < outs; ++j) any |= IsContainer(branches[0]->outputs()[j]) || IsContainer(branches[1]->outputs()[j]);
  if (!any) return false;
  // Per container output: one new If output per element, and the branches give the elements.
  std::vector<bool> container(outs, false);
  std::vector<ir::Type> types(outs);
  std::vector<std::vector<ir::Value*>> resolved(outs);
  std::vector<std::vector<ir::Value*>> body_outputs(2);
  std::vector<RuntimeOptional> runtime(outs);
  for (size_t j = 0; j < outs; ++j) {
    ir::Value* t = branches[0]->outputs()[j];
    ir::Value* f = branches[1]->outputs()[j];
    if (!IsContainer(t) && !IsContainer(f)) {
      body_outputs[0].push_back(t), body_outputs[1].push_back(f);
      continue;
    }
    if (!t->elements() || !f->elements() || t->type().kind() != f->type().kind())
      return Refuse(node, "output " + std::to_string(j) + " is a sequence or optional the compiler cannot follow in both branches");
    container[j] = true;
    types[j] = t->type();
    const auto& te = *t->elements();
    const auto& fe = *f->elements();
    if (t->type().kind() == ir::Type::Kind::kOptional && te.size() + fe.size() == 1) {
      // Present in one branch only: the If also gives whether it is, and the other branch gives
      // zeros in its place.
      PRECIS_ASSIGN_OR_RETURN(runtime[j], PresentInOneBranch(g, node, j, branches, te.empty() ? 0 : 1, body_outputs));
      continue;
    }
    if (te.size() != fe.size())
      return Refuse(node, "output " + std::to_string(j) +
                              (t->type().kind() == ir::Type::Kind::kOptional
                                   ? " is an optional present in one branch and empty in the other"
                                   : " is a sequence of " + std::to_string(te.size()) + " elements in one branch and " + std::to_string(fe.size()) +
                                         " in the other") +
                              "; Precis fixes sequences when it compiles");
    for (size_t k = 0; k < te.size(); ++k) {
      if (te[k]->elements() || fe[k]->elements()) return Refuse(node, "output " + std::to_string(j) + " nests sequences");
      if (te[k]->type().dtype() != fe[k]->type().dtype())
        return InvalidArgument(node.Describe() + ": element " + std::to_string(k) + " of output " + std::to_string(j) +
                               " differs in dtype between the branches");
      std::string base = node.outputs()[j] ? node.outputs()[j]->name() : "if_output";
      resolved[j].push_back(g.NewValue(match::FreshName(g, base + "/" + std::to_string(k))));
      for (int b = 0; b < 2; ++b) {
        // Branch outputs are values the branch produces: an Identity gives each element its own.
        ir::Value* el = b == 0 ? te[k] : fe[k];
        ir::Value* out = branches[b]->NewValue(match::FreshName(*branches[b], el->name() + "/out"));
        out->set_type(el->type());
        branches[b]->AddNode("", "Identity", match::FreshName(*branches[b], "Identity/element"), {el}, {out}, {});
        body_outputs[b].push_back(out);
      }
    }
  }
  for (int b = 0; b < 2; ++b) branches[b]->SetOutputs(body_outputs[b]);
  // The new If takes over the tensor outputs (the old node gets placeholders).
  std::vector<ir::Value*> new_outputs, placeholders;
  for (size_t j = 0; j < outs; ++j) {
    ir::Value* out = node.outputs()[j];
    if (container[j] && runtime[j].present) {
      new_outputs.push_back(runtime[j].present);
      new_outputs.insert(new_outputs.end(), runtime[j].tensors.begin(), runtime[j].tensors.end());
    } else if (container[j]) {
      new_outputs.insert(new_outputs.end(), resolved[j].begin(), resolved[j].end());
    } else if (!out) {
      new_outputs.push_back(nullptr);
    } else {
      ir::Value* placeholder = g.NewValue(match::FreshName(g, out->name() + "/moved"));
      g.SetNodeOutput(&node, int(j), placeholder);
      placeholders.push_back(placeholder);
      new_outputs.push_back(out);
    }
  }
  std::vector<ir::Attribute> attrs = std::move(node.mutable_attributes());
  node.mutable_attributes().clear();
  ir::Node* flat = g.AddNode(node.domain(), node.op_type(), match::FreshName(g, node.name() + "/flat"), node.inputs(), new_outputs, std::move(attrs));
  std::vector<ir::Node*> order;
  for (const auto& n : g.nodes()) {
    if (n.get() == flat) continue;
    if (n.get() == &node) order.push_back(flat);
    order.push_back(n.get());
  }
  g.SetNodeOrder(order);
  for (size_t j = 0; j < outs; ++j)
    if (ir::Value* out = node.outputs()[j]; out && container[j]) {
      out->set_type(types[j]);
      if (!runtime[j].present) {
        out->set_elements(resolved[j]);
        continue;
      }
      ir::Value* payload = runtime[j].tensors.size() == 1 && !runtime[j].sequence ? runtime[j].tensors[0] : nullptr;
      if (!payload) {
        payload = g.NewValue(match::FreshName(g, out->name() + "/value"));
        payload->set_type(types[j].element());
        payload->set_elements(runtime[j].tensors);
      }
      out->set_runtime_optional(runtime[j].present, payload);
    }
  g.DetachNode(&node);
  for (ir::Value* v : placeholders) g.RemoveOrphanValue(v);
  return true;
}

Status FinishSequences(ir::Model& model) {
  ir::Graph& g = *model.graph;
  std::vector<ir::Value*> outputs;
  bool changed = false;
  // Graph output `name`: an Identity of `value`.
  auto output = [&](const std::string& name, ir::Value* value) -> Status {
    if (ir::Value* taken = g.FindLocal(name); taken && (taken != value || value->kind() != ir::Value::Kind::kNodeOutput))
      return InvalidArgument("output '" + name + "': the model already has a value named '" + name + "'");
    if (g.FindLocal(name) == value) g.Rename(value, match::FreshName(g, name + "/resolved"));
    ir::Value* out = g.NewValue(name);
    out->set_type(value->type());
    g.AddNode("", "Identity", match::FreshName(g, name + "/element"), {value}, {out}, {});
    outputs.push_back(out);
    return Status::Ok();
  };
  model.output_containers.clear();
  for (ir::Value* v : g.outputs()) {
    if (v->stacked() || v->present()) {
      // Decided when the plan runs: the plan outputs its parts, and the session assembles it.
      changed = true;
      const std::string name = v->name();
      g.Rename(v, match::FreshName(g, name + "/resolved"));
      ir::OutputContainer c;
      c.name = name;
      ir::Value* seq = v;
      if (v->present()) {
        c.present = name + "/present";
        PRECIS_RETURN_IF_ERROR(output(c.present, v->present()));
        seq = v->payload()->type().is_tensor() && !v->payload()->resolved_container() ? nullptr : v->payload();
        c.kind = seq ? ir::OutputContainer::Kind::kOptionalSequence : ir::OutputContainer::Kind::kOptionalTensor;
        if (!seq) {
          c.elements.push_back(name);
          PRECIS_RETURN_IF_ERROR(output(name, v->payload()));
        }
      }
      if (seq && seq->stacked()) {
        c.stack = name + "/stack";
        PRECIS_RETURN_IF_ERROR(output(c.stack, seq->stacked()));
        if (PaddedDims(*seq)) {
          c.dims = name + "/dims";
          PRECIS_RETURN_IF_ERROR(output(c.dims, seq->stacked_dims()));
        }
      } else if (seq) {
        for (size_t i = 0; i < seq->elements()->size(); ++i) {
          ir::Value* el = (*seq->elements())[i];
          if (el->resolved_container()) return Unimplemented("output '" + name + "' nests sequences");
          c.elements.push_back(ElementName(name, i));
          PRECIS_RETURN_IF_ERROR(output(c.elements.back(), el));
        }
      }
      model.output_containers.push_back(std::move(c));
      continue;
    }
    if (!v->elements()) {
      if (IsContainer(v)) return Unimplemented("output '" + v->name() + "' is a sequence or optional computed at run time; Precis resolves sequences when it compiles");
      outputs.push_back(v);
      continue;
    }
    changed = true;
    const std::string name = v->name();
    std::vector<ir::Value*> elements = *v->elements();
    bool optional = v->type().kind() == ir::Type::Kind::kOptional;
    if (optional && elements.empty()) continue;  // an absent optional: no output
    std::vector<std::string> names;
    if (optional && !elements[0]->elements()) {
      names.push_back(name);
    } else {
      if (optional) elements = *elements[0]->elements();
      for (size_t i = 0; i < elements.size(); ++i) names.push_back(ElementName(name, i));
    }
    if (std::find(names.begin(), names.end(), name) != names.end()) g.Rename(v, match::FreshName(g, name + "/resolved"));
    for (size_t i = 0; i < elements.size(); ++i) {
      if (elements[i]->elements()) return Unimplemented("output '" + name + "' nests sequences");
      PRECIS_RETURN_IF_ERROR(output(names[i], elements[i]));
    }
  }
  if (changed) g.SetOutputs(outputs);
  // Resolved values nothing reads any more.
  Status status = Status::Ok();
  std::vector<std::pair<ir::Graph*, ir::Value*>> drop;
  ir::ForEachGraph(g, [&](const ir::Graph& sub) {
    for (const auto& v : sub.values()) {
      if (v->kind() != ir::Value::Kind::kNodeOutput || v->producer() || !v->resolved_container()) continue;
      if (!v->uses().empty()) {
        if (status.ok()) status = Unimplemented("the sequence '" + v->name() + "' is still read by " + v->uses()[0].node->Describe());
        continue;
      }
      if (std::find(sub.outputs().begin(), sub.outputs().end(), v.get()) != sub.outputs().end()) {
        if (status.ok()) status = Unimplemented("the sequence '" + v->name() + "' is an output of a loop body; Precis resolves sequences when it compiles");
        continue;
      }
      drop.push_back({const_cast<ir::Graph*>(&sub), v.get()});
    }
  });
  PRECIS_RETURN_IF_ERROR(status);
  for (auto& [sub, v] : drop) sub->RemoveOrphanValue(v);
  return Status::Ok();
}

}  // namespace precis::passes
