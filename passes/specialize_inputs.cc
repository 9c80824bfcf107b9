// SpecializeInputs (see specialize_inputs.h).
#include "passes/specialize_inputs.h"

#include "compiler/ir/text.h"

namespace precis::passes {

Status SpecializeInputs(ir::Model& model, const std::map<std::string, std::vector<int64_t>>& shapes,
                        std::map<std::string, ir::Tensor> values) {
  ir::Graph& g = *model.graph;
  std::string names;
  for (const ir::Value* v : g.inputs()) names += (names.empty() ? "" : ", ") + v->name();
  std::map<std::string, int64_t> symbols;
  for (const auto& [name, dims] : shapes) {
    ir::Value* v = g.FindLocal(name);
    if (!v || v->kind() != ir::Value::Kind::kInput)
      return InvalidArgument("--shape names '" + name + "', which is not a model input (inputs: " + names + ")");
    const ir::Type& t = v->type();
    if (!t.is_tensor()) return InvalidArgument("input '" + name + "' is not a tensor");
    if (t.shape().has_rank()) {
      const auto& known = t.shape().dims();
      if (known.size() != dims.size())
        return InvalidArgument("input '" + name + "' has rank " + std::to_string(known.size()) + ", --shape gives " +
                               std::to_string(dims.size()) + " dims");
      for (size_t i = 0; i < dims.size(); ++i) {
        if (known[i].is_static() && known[i].value() != dims[i])
          return InvalidArgument("input '" + name + "' dim " + std::to_string(i) + " is " + std::to_string(known[i].value()) +
                                 ", --shape gives " + std::to_string(dims[i]));
        if (known[i].is_symbolic()) {
          auto [it, inserted] = symbols.emplace(known[i].symbol(), dims[i]);
          if (!inserted && it->second != dims[i])
            return InvalidArgument("dimension '" + known[i].symbol() + "' is bound to both " + std::to_string(it->second) +
                                   " and " + std::to_string(dims[i]));
        }
      }
    }
    for (int64_t d : dims)
      if (d < 0 || d > ir::kMaxDim) return InvalidArgument("--shape for '" + name + "' has an invalid dim");
    v->set_type(ir::Type::Tensor(t.dtype(), ir::Shape::FromStatic(dims)));
  }
  // Other inputs that use a bound symbol get its size too.
  for (ir::Value* v : g.inputs()) {
    const ir::Type& t = v->type();
    if (!t.is_tensor() || !t.shape().has_rank() || shapes.count(v->name())) continue;
    std::vector<ir::Dim> dims = t.shape().dims();
    for (auto& d : dims)
      if (d.is_symbolic() && symbols.count(d.symbol())) d = ir::Dim::Static(symbols[d.symbol()]);
    v->set_type(ir::Type::Tensor(t.dtype(), ir::Shape(std::move(dims))));
  }
  for (auto& [name, data] : values) {
    ir::Value* v = g.FindLocal(name);
    if (!v || v->kind() != ir::Value::Kind::kInput)
      return InvalidArgument("cannot specialize '" + name + "': it is not a model input (inputs: " + names + ")");
    const ir::Type& t = v->type();
    if (t.is_tensor() && t.dtype() != ir::DType::kUndefined && t.dtype() != data.dtype())
      return InvalidArgument("input '" + name + "' is " + std::string(ir::DTypeName(t.dtype())) + ", its value is " +
                             std::string(ir::DTypeName(data.dtype())));
    g.ConvertInputToConstant(v, std::move(data));
  }
  return Status::Ok();
}

}  // namespace precis::passes
