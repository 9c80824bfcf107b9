// InferShapesAndFold (see infer_shapes.h).
#include "passes/infer_shapes.h"

#include <algorithm>
#include <cstring>
#include <map>

#include "compiler/ops/control_flow.h"
#include "compiler/ops/evaluate.h"
#include "compiler/ops/expand.h"
#include "compiler/ir/text.h"
#include "compiler/ops/op_registry.h"
#include "compiler/ops/shape_values.h"
#include "runtime/base/value_expr.h"
#include "passes/sequences.h"

namespace precis::passes {
namespace {

// A declared type (value_info) fills in what inference leaves unknown; inference wins otherwise.
ir::Type Merge(const ir::Type& inferred, const ir::Type& declared) {
  if (!inferred.is_tensor() || !declared.is_tensor()) return inferred.is_unknown() ? declared : inferred;
  ir::DType dtype = inferred.dtype() != ir::DType::kUndefined ? inferred.dtype() : declared.dtype();
  if (!inferred.shape().has_rank()) return ir::Type::Tensor(dtype, declared.shape());
  std::vector<ir::Dim> dims = inferred.shape().dims();
  if (declared.shape().has_rank() && declared.shape().rank() == int64_t(dims.size()))
    for (size_t i = 0; i < dims.size(); ++i)
      if (dims[i].is_unknown()) dims[i] = declared.shape().dims()[i];
  return ir::Type::Tensor(dtype, ir::Shape(std::move(dims)));
}

class Inferrer {
 public:
  Inferrer(ir::Model& model, const InferOptions& options) : model_(model), options_(options) {}

  StatusOr<InferStats> Run() {
    ir::Graph& g = *model_.graph;
    SeedValueSymbols(g);
    // Folding removes nodes, so walk by position and re-read the node list.
    for (size_t i = 0; i < g.nodes().size();) {
      ir::Node* node = g.nodes()[i].get();
      PRECIS_ASSIGN_OR_RETURN(bool removed, Visit(g, *node));
      if (!removed) ++i;
    }
    if (unknown_.empty() && first_error_.ok()) {
      Status finished = FinishSequences(model_);
      if (!finished.ok()) return finished;
    }
    if (!unknown_.empty()) {
      std::string msg = "unsupported operators: ";
      bool first = true;
      for (const auto& [op, nodes] : unknown_) {
        msg += (first ? "" : "; ") + op + " (" + nodes.names;
        if (nodes.count > kNamesListed) msg += " and " + std::to_string(nodes.count - kNamesListed) + " more";
        msg += ")";
        first = false;
      }
      return Unimplemented(msg);
    }
    if (!first_error_.ok()) return first_error_;
    return stats_;
  }

 private:
  int64_t OpsetOf(const std::string& domain) const {
    auto it = model_.opsets.find(domain);
    return it == model_.opsets.end() ? -1 : it->second;
  }

  // Returns whether the node was folded away.
  StatusOr<bool> Visit(ir::Graph& g, ir::Node& node) {
    if (IsSequenceOperator(node) && (!unknown_.empty() || !first_error_.ok())) return false;  // no types after an error
    if (unknown_.empty() && first_error_.ok()) {
      bool handled = false;
      bool node_was_loop = node.op_type() == "Loop";  // the node is gone once resolved
      bool loop_kept = false;
      auto removed = ResolveSequenceNode(g, node, OpsetOf(node.domain()), &handled, &loop_kept);
      if (!removed.ok()) {
        first_error_ = removed.status();
        return false;
      }
      if (handled) {
        if (*removed) ++(loop_kept ? stats_.stacked_loops : node_was_loop ? stats_.unrolled_loops : stats_.sequence_ops);
        return *removed;
      }
    }
    if (ops::ExpandFn expand = ops::FindExpander(node.domain(), node.op_type(), OpsetOf(node.domain()))) {
      if (!unknown_.empty() || !first_error_.ok()) return false;
      ops::Expander e(g, node, OpsetOf(node.domain()));
      auto changed = expand(e);
      if (!changed.ok()) {
        first_error_ = changed.status();
        return false;
      }
      if (*changed) {
        ++stats_.expanded_nodes;
        return true;  // inference resumes with the first built node
      }
    }
    const ops::OpDef* def = ops::OpRegistry::Get().Find(node.domain(), node.op_type());
    std::string op = node.domain().empty() ? node.op_type() : node.domain() + "::" + node.op_type();
    if (!def) {
      UnknownOp& u = unknown_[op];
      if (++u.count <= kNamesListed)
        u.names += (u.names.empty() ? "" : ", ") + (node.name().empty() ? "node " + std::to_string(node.index()) : "'" + node.name() + "'");
      return false;
    }
    if (!unknown_.empty() || !first_error_.ok()) return false;  // types downstream are unreliable now
    int64_t opset = OpsetOf(node.domain());
    if (opset < def->min_opset || opset > def->max_opset) {
      first_error_ = Unimplemented(node.Describe() + ": " + op + " at opset " + std::to_string(opset) +
                                   " is not supported (supported: " + std::to_string(def->min_opset) + " to " +
                                   (def->max_opset == INT_MAX ? std::string("latest") : std::to_string(def->max_opset)) + ")");
      return false;
    }
    {
      auto inlined = InlineConstantIf(g, node, opset);
      if (!inlined.ok()) {
        first_error_ = inlined.status();
        return false;
      }
      if (*inlined) return true;  // inference resumes with the branch's nodes
    }
    PRECIS_RETURN_IF_ERROR(VisitBodies(node, opset));
    if (!unknown_.empty() || !first_error_.ok()) return false;
    {
      auto flattened = FlattenIfContainers(g, node);
      if (!flattened.ok()) {
        first_error_ = flattened.status();
        return false;
      }
      if (*flattened) return true;  // inference resumes with the If that gives the elements
    }
    ops::InferContext ctx(node, opset);
    Status s = def->infer(ctx);
    if (!s.ok()) {
      first_error_ = s;
      return false;
    }
    for (size_t i = 0; i < node.outputs().size(); ++i) {
      ir::Value* out = node.outputs()[i];
      if (!out || i >= ctx.outputs().size()) continue;
      // Shapes computed from values (Range, Tile, Expand, ConstantOfShape...) can be anything a
      // model says: refused here, before anything is sized or allocated from them.
      const ir::Type& t = ctx.outputs()[i];
      if (t.is_tensor() && t.shape().is_static() && !t.shape().NumElements()) {
        first_error_ = InvalidArgument(node.Describe() + ": output " + std::to_string(i) + " would have type " + ir::PrintType(t) +
                                       ", beyond what Precis plans (dims up to 2^40, up to 2^50 elements)");
        return false;
      }
      out->set_type(Merge(ctx.outputs()[i], out->type()));
    }
    if (PropagateKnownValues(g, node, opset)) return true;
    if (!options_.fold_constants || !def->foldable) return false;
    if (options_.fold_constants && FoldShapeOf(g, node, opset)) return true;
    return Fold(g, node, *def, opset);
  }

  // The bodies of If, Loop and Scan: their inputs get the types the operator gives them, then
  // their nodes are inferred (and folded) like the main graph's.
  Status VisitBodies(ir::Node& node, int64_t opset) {
    for (auto& [attr, body] : ops::ControlFlowBodies(node)) {
      auto types = ops::BodyInputTypes(node, attr, opset);
      if (!types.ok()) {
        first_error_ = types.status();
        return Status::Ok();
      }
      if (types->size() != body->inputs().size()) {
        first_error_ = InvalidArgument(node.Describe() + ": its " + attr + " takes " + std::to_string(body->inputs().size()) + " inputs, " +
                                       std::to_string(types->size()) + " expected");
        return Status::Ok();
      }
      for (size_t i = 0; i < types->size(); ++i) body->inputs()[i]->set_type(Merge((*types)[i], body->inputs()[i]->type()));
      // A Loop's iteration number is a value >= 0 that shapes may follow as long as the
      // difference cancels (x[i:i+1]); InferLoop refuses dims that keep it.
      if (node.op_type() == "Loop" && node.domain().empty() && !body->inputs().empty())
        body->inputs()[0]->set_known_values({ir::DimExpr::Symbol(ops::IterationSymbol(node))});
      for (size_t i = 0; i < body->nodes().size();) {
        PRECIS_ASSIGN_OR_RETURN(bool removed, Visit(*body, *body->nodes()[i]));
        if (!removed) ++i;
      }
    }
    return Status::Ok();
  }

  // Small integer (and bool) inputs of static shape may decide shapes (a Reshape's target given
  // as an input, a Loop's initial condition): their elements become value symbols ("$K_E",
  // ir::DimExpr), followed through the shape arithmetic like symbolic dims; the plan binds them
  // from the input's values at run time. Small float inputs get value expressions ("i<K>e<E>",
  // runtime/base/value_expr.h): a size computed from them (a Range over float bounds) is one.
  static void SeedValueSymbols(ir::Graph& g) {
    for (size_t k = 0; k < g.inputs().size(); ++k) {
      ir::Value* v = g.inputs()[k];
      const ir::Type& t = v->type();
      if (!v->known_exprs() && t.is_tensor() && ir::IsFloat(t.dtype()) && t.shape().is_static() && t.shape().rank() <= 1 &&
          t.shape().NumElements() && *t.shape().NumElements() <= int64_t(ops::kMaxKnownExprs)) {
        std::vector<std::string> exprs;
        for (int64_t e = 0; e < *t.shape().NumElements(); ++e) exprs.push_back(value_expr::Input(k, size_t(e)));
        v->set_known_exprs(std::move(exprs));
      }
      if (v->known_values() || !t.is_tensor() || (t.dtype() != ir::DType::kI64 && t.dtype() != ir::DType::kI32 && t.dtype() != ir::DType::kBool) ||
          !t.shape().is_static() || t.shape().rank() > 1)
        continue;
      auto n = t.shape().NumElements();
      if (!n || *n < 1 || *n > kMaxValueSymbols) continue;
      std::vector<ir::DimExpr> values;
      for (int64_t e = 0; e < *n; ++e) values.push_back(ir::DimExpr::Symbol(ir::DimExpr::ValueSymbol(k, size_t(e))));
      v->set_known_values(std::move(values));
    }
  }
  static constexpr int64_t kMaxValueSymbols = 16;

  // Shape arithmetic over symbolic dims (ops/shape_values.h): output 0 gets its values as dim
  // expressions; where they all come out constant (the static dims of a symbolic shape), the
  // output becomes a constant. Returns whether the node was folded away.
  bool PropagateKnownValues(ir::Graph& g, ir::Node& node, int64_t opset) {
    // Split of known values (a shape vector split into its dims): each output takes its piece.
    if (node.op_type() == "Split" && node.domain().empty() && !node.inputs().empty() && node.inputs()[0] && node.inputs()[0]->known_values()) {
      const std::vector<ir::DimExpr>& all = *node.inputs()[0]->known_values();
      std::vector<size_t> lengths;
      for (const ir::Value* out : node.outputs()) {
        const ir::Type& t = out ? out->type() : ir::Type();
        if (!t.is_tensor() || t.shape().rank() != 1 || !t.shape().is_static()) return false;
        lengths.push_back(size_t(t.shape().dims()[0].value()));
      }
      size_t total = 0;
      for (size_t l : lengths) total += l;
      if (total != all.size() || node.inputs()[0]->type().shape().rank() != 1) return false;
      size_t at = 0;
      for (size_t k = 0; k < lengths.size(); ++k) {
        node.outputs()[k]->set_known_values(std::vector<ir::DimExpr>(all.begin() + long(at), all.begin() + long(at + lengths[k])));
        at += lengths[k];
      }
      return false;
    }
    auto known = ops::KnownValues(node, opset);
    if (!known) {
      // Float arithmetic over run-time values that may become a size (a Range's bounds).
      if (auto exprs = ops::KnownExprs(node, opset)) node.outputs()[0]->set_known_exprs(std::move(*exprs));
      return false;
    }
    ir::Value* out = node.outputs()[0];
    const ir::Type& t = out->type();
    bool constant = std::all_of(known->begin(), known->end(), [](const ir::DimExpr& e) { return e.is_constant(); });
    ir::DType dt = t.is_tensor() ? t.dtype() : ir::DType::kUndefined;
    if (constant && options_.fold_constants && node.outputs().size() == 1 && t.shape().is_static() &&
        (dt == ir::DType::kI64 || dt == ir::DType::kI32 || dt == ir::DType::kBool)) {
      size_t esize = size_t(ir::DTypeSize(dt));
      std::vector<uint8_t> bytes(known->size() * esize);
      for (size_t k = 0; k < known->size(); ++k) {
        int64_t v = (*known)[k].constant();
        if (dt == ir::DType::kI64) std::memcpy(&bytes[k * 8], &v, 8);
        else if (dt == ir::DType::kI32) { int32_t x = int32_t(v); std::memcpy(&bytes[k * 4], &x, 4); }
        else bytes[k] = v != 0;
      }
      std::vector<int64_t> dims;
      for (const ir::Dim& d : t.shape().dims()) dims.push_back(d.value());
      g.ConvertToConstant(out, ir::Tensor(dt, dims, ir::Buffer::Own(std::move(bytes))));
      g.RemoveNode(&node);
      ++stats_.folded_nodes;
      return true;
    }
    out->set_known_values(std::move(*known));
    return false;
  }

  // Shape and Size depend only on their input's type: once that is static they are constants,
  // whatever computes the input. This is what makes exported shape plumbing fold away.
  bool FoldShapeOf(ir::Graph& g, ir::Node& node, int64_t opset) {
    if (!node.domain().empty() || (node.op_type() != "Shape" && node.op_type() != "Size")) return false;
    if (node.inputs().empty() || !node.inputs()[0] || node.outputs().empty() || !node.outputs()[0]) return false;
    const ir::Type& t = node.inputs()[0]->type();
    if (!t.is_tensor() || !t.shape().is_static()) return false;
    std::vector<int64_t> dims;
    for (const ir::Dim& d : t.shape().dims()) dims.push_back(d.value());
    std::vector<int64_t> values;
    if (node.op_type() == "Size") {
      values.push_back(*ir::CheckedElements(dims));
    } else {
      int64_t rank = int64_t(dims.size()), start = 0, end = rank;
      if (opset >= 15) {
        ops::InferContext ctx(node, opset);
        start = ctx.Int("start", 0);
        end = ctx.Int("end", rank);
        if (start < 0) start += rank;
        if (end < 0) end += rank;
        start = std::clamp<int64_t>(start, 0, rank);
        end = std::clamp<int64_t>(end, 0, rank);
      }
      for (int64_t i = start; i < end; ++i) values.push_back(dims[size_t(i)]);
    }
    std::vector<uint8_t> bytes(values.size() * 8);
    if (!values.empty()) std::memcpy(bytes.data(), values.data(), bytes.size());
    std::vector<int64_t> out_dims;
    if (node.op_type() == "Shape") out_dims.push_back(int64_t(values.size()));
    g.ConvertToConstant(node.outputs()[0], ir::Tensor(ir::DType::kI64, out_dims, ir::Buffer::Own(std::move(bytes))));
    g.RemoveNode(&node);
    ++stats_.folded_nodes;
    return true;
  }

  StatusOr<bool> Fold(ir::Graph& g, ir::Node& node, const ops::OpDef& def, int64_t opset) {
    std::vector<const ir::Tensor*> inputs;
    for (const ir::Value* v : node.inputs()) {
      if (!v) {
        inputs.push_back(nullptr);
        continue;
      }
      if (!v->is_constant() || !v->data()->has_data() || v->data()->dtype() == ir::DType::kString) return false;
      inputs.push_back(v->data());
    }
    std::vector<ir::Type> types;
    int64_t bytes = 0;
    for (const ir::Value* v : node.outputs()) {
      if (!v) {
        types.push_back(ir::Type());
        continue;
      }
      const ir::Type& t = v->type();
      if (!t.is_tensor() || !t.shape().is_static() || ir::DTypeSize(t.dtype()) == 0) return false;
      std::optional<int64_t> n = t.shape().NumElements();
      if (!n) return false;
      bytes += *n * ir::DTypeSize(t.dtype());
      types.push_back(t);
    }
    if (bytes > options_.max_fold_bytes) return false;
    for (size_t i = 0; i < types.size(); ++i)
      if (types[i].is_unknown()) return false;  // kernels expect every output present
    auto results = ops::EvaluateNode(node, def.kernel.empty() ? node.op_type() : def.kernel, opset, inputs, types);
    if (!results.ok()) {
      first_error_ = results.status();
      return false;
    }
    for (size_t i = 0; i < node.outputs().size(); ++i)
      if (ir::Value* out = node.outputs()[i]) g.ConvertToConstant(out, std::move((*results)[i]));
    g.RemoveNode(&node);
    ++stats_.folded_nodes;
    return true;
  }

  ir::Model& model_;
  const InferOptions& options_;
  InferStats stats_;
  static constexpr int kNamesListed = 3;
  struct UnknownOp {
    int count = 0;
    std::string names;  // the first kNamesListed nodes
  };
  std::map<std::string, UnknownOp> unknown_;
  Status first_error_;
};

}  // namespace

StatusOr<InferStats> InferShapesAndFold(ir::Model& model, const InferOptions& options) {
  return Inferrer(model, options).Run();
}

}  // namespace precis::passes
