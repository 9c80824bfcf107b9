// ShapeOf and FindDataDims (see data_dims.h).
#include "compiler/emit/data_dims.h"

#include "compiler/ir/text.h"
#include "compiler/ops/control_flow.h"
#include "compiler/ops/shape_values.h"

namespace precis::emit {

StatusOr<std::vector<int64_t>> ShapeOf(const ir::Value& v, std::vector<ir::DimExpr>& symbolic) {
  const ir::Type& t = v.type();
  if (!t.is_tensor() || t.dtype() == ir::DType::kUndefined)
    return Unimplemented("value '" + v.name() + "' has no known tensor type (" + ir::PrintType(t) + ")");
  if (t.dtype() == ir::DType::kString) return Unimplemented("value '" + v.name() + "' is a string tensor; plans hold numbers only");
  if (!t.shape().has_rank()) return Unimplemented("value '" + v.name() + "' has unknown rank");
  std::vector<int64_t> dims;
  symbolic.clear();
  for (const ir::Dim& d : t.shape().dims()) {
    if (d.is_symbolic()) {
      auto e = ir::DimExpr::FromDim(d);
      if (!e) return Unimplemented("value '" + v.name() + "' has symbolic dim '" + d.symbol() + "', which is not an expression Precis can compute");
      symbolic.push_back(*e);
      dims.push_back(-1);
      continue;
    }
    if (!d.is_static())
      return Unimplemented("value '" + v.name() + "'" + (v.producer() ? " (from " + v.producer()->Describe() + ")" : std::string()) +
                           " has a dimension Precis cannot compute from the input dims (" + ir::PrintType(t) +
                           "): it depends on data, or on symbolic dims in a way plans cannot express yet; give the inputs concrete shapes "
                           "(--shape NAME=1x3x224x224)");
    dims.push_back(d.value());
  }
  return dims;
}

StatusOr<std::vector<DataDimSource>> FindDataDims(const std::set<std::string>& unbound, const std::set<std::string>& input_bound,
                                                  const std::vector<const ir::Value*>& values) {
  std::vector<DataDimSource> out;
  for (size_t i = 0; i < values.size(); ++i) {
    const ir::Value* v = values[i];
    const ir::Node* node = v ? v->producer() : nullptr;
    if (!node) continue;
    auto holder = ops::DataDimOutput(*node);
    if (!holder || holder->first != size_t(v->output_index())) continue;
    std::optional<size_t> axis = holder->second;
    std::string symbol = ops::DataDim(*node).symbol();
    if (!unbound.count(symbol)) continue;
    bool seen = false;
    for (const DataDimSource& d : out) seen |= d.symbol == symbol;
    if (seen) continue;
    if (node->owner() && node->owner()->parent_node())
      return Unimplemented(node->Describe() + ": its output size depends on the data, inside a control-flow body; such sizes are bound only in "
                           "the main graph so far");
    auto bound = ops::DataDimBound(*node);
    if (!bound)
      return Unimplemented(node->Describe() + ": no upper bound of its data-dependent output size is known from its input shapes" +
                           (node->op_type() == "Loop" ? std::string(" (a Loop needs a trip count M, a constant or an input value)") : std::string()));
    for (const std::string& s : bound->Symbols())
      if (!input_bound.count(s))
        return Unimplemented(node->Describe() + ": the bound of its data-dependent output size (" + bound->ToString() +
                             ") depends on another data-dependent size; chains of such sizes are not supported yet");
    out.push_back({symbol, i, *axis, *bound, "count(" + v->name() + ")"});
  }
  return out;
}

StatusOr<std::vector<IterationSource>> FindIterationSymbols(const std::vector<LoopBody>& loops, std::set<std::string>& all) {
  // The plan binds the number per iteration, planned at its bound (the largest number).
  std::vector<IterationSource> out;
  for (const LoopBody& l : loops) {
    if (!all.count(l.symbol)) continue;
    auto b = ops::IterationBound(*l.loop);
    if (!b) return Unimplemented(l.loop->Describe() + ": its body's shapes follow the iteration number and it has no trip count to bound them");
    out.push_back({l.symbol, l.program, *b});
    for (const std::string& s : b->Symbols()) all.insert(s);
  }
  return out;
}

}  // namespace precis::emit
