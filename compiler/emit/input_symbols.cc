// FindInputSymbols (see input_symbols.h).
#include "compiler/emit/input_symbols.h"

#include "runtime/base/value_expr.h"

namespace precis::emit {
namespace {

// The entry input that is input `index` of the main graph, or -1.
int MainGraphInput(const std::vector<EntryInput>& inputs, size_t index) {
  for (const EntryInput& in : inputs) {
    const ir::Graph* g = in.value->owner();
    if (g && !g->parent_node() && index < g->inputs().size() && g->inputs()[index] == in.value) return in.tensor;
  }
  return -1;
}

const ir::Value* ValueOf(const std::vector<EntryInput>& inputs, int tensor) {
  for (const EntryInput& in : inputs)
    if (in.tensor == tensor) return in.value;
  return nullptr;
}

}  // namespace

StatusOr<InputSymbols> FindInputSymbols(const std::set<std::string>& symbols, const std::vector<EntryInput>& inputs) {
  InputSymbols out;
  // Value symbols: "$K_E" is an element of an integer input that carries the symbols as its
  // known values (passes/infer_shapes.cc); "$K_E_M" reads float input K of the main graph.
  for (const std::string& s : symbols) {
    size_t input = 0, element = 0;
    int64_t scale = 0;
    if (!ir::DimExpr::ParseValueSymbol(s, &input, &element, &scale)) continue;
    int source = -1;
    if (scale == 0) {
      for (const EntryInput& in : inputs) {
        const std::vector<ir::DimExpr>* known = in.value->known_values();
        if (known && element < known->size() && (*known)[element] == ir::DimExpr::Symbol(s)) source = in.tensor;
      }
    } else {
      source = MainGraphInput(inputs, input);
      if (source >= 0 && !ir::IsFloat(ValueOf(inputs, source)->type().dtype())) source = -1;
    }
    if (source < 0) return Internal("a shape depends on value " + s + ", which no input of the plan holds");
    out.values.push_back({s, source, int64_t(element), scale});
    std::string name = ValueOf(inputs, source)->name() + "[" + std::to_string(element) + "]";
    out.display[s] = scale > 0 ? "floor(" + std::to_string(scale) + "*" + name + ")" : name;
  }
  // Value expressions: leaf i<K>e<E> (graph input K) becomes t<tensor>e<E>. Names that print
  // alike (roundings are not written) get "#2", "#3".
  std::set<std::string> names;
  for (const std::string& s : symbols) {
    if (!value_expr::IsSymbol(s)) continue;
    auto leaves = value_expr::Leaves(s);
    if (!leaves) return Internal("a shape depends on a value expression that does not parse: " + s);
    std::map<int64_t, int> tensor_of;  // graph input -> tensor id
    for (const value_expr::Leaf& leaf : *leaves) {
      int source = leaf.kind == 'i' ? MainGraphInput(inputs, size_t(leaf.index)) : -1;
      auto count = source >= 0 ? ValueOf(inputs, source)->type().shape().NumElements() : std::nullopt;
      if (!count || leaf.element >= *count) return Internal("a shape depends on value " + s + ", which no input of the plan holds");
      tensor_of[leaf.index] = source;
    }
    auto code = value_expr::MapLeaves(s, [&](const value_expr::Leaf& l) { return "t" + std::to_string(tensor_of[l.index]) + "e" + std::to_string(l.element); });
    auto text = value_expr::Display(s, [&](const value_expr::Leaf& l) {
      return ValueOf(inputs, tensor_of[l.index])->name() + "[" + std::to_string(l.element) + "]";
    });
    if (!code || !text) return Internal("a shape depends on a value expression that does not parse: " + s);
    std::string name = *text;
    for (int k = 2; names.count(name); ++k) name = *text + "#" + std::to_string(k);
    names.insert(name);
    out.display[s] = name;
    out.exprs.push_back({s, *code});
  }
  return out;
}

}  // namespace precis::emit
