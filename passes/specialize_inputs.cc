// SpecializeInputs (see specialize_inputs.h).
#include "passes/specialize_inputs.h"

#include "compiler/ir/text.h"

namespace precis::passes {

std::string ElementName(const std::string& name, size_t i) { return name + "[" + std::to_string(i) + "]"; }

namespace {

Status CheckDims(const std::string& name, const std::vector<int64_t>& dims) {
  for (int64_t d : dims)
    if (d < 0 || d > ir::kMaxDim) return InvalidArgument("--shape for '" + name + "' has an invalid dim");
  return Status::Ok();
}

// The dims given for a tensor of declared type `t` (rank and static dims must agree).
Status CheckAgainst(const std::string& what, const ir::Type& t, const std::vector<int64_t>& dims) {
  if (!t.is_tensor() || !t.shape().has_rank()) return Status::Ok();
  const auto& known = t.shape().dims();
  if (known.size() != dims.size())
    return InvalidArgument(what + " has rank " + std::to_string(known.size()) + ", --shape gives " + std::to_string(dims.size()) + " dims");
  for (size_t i = 0; i < dims.size(); ++i)
    if (known[i].is_static() && known[i].value() != dims[i])
      return InvalidArgument(what + " dim " + std::to_string(i) + " is " + std::to_string(known[i].value()) + ", --shape gives " +
                             std::to_string(dims[i]));
  return Status::Ok();
}

// Sequence inputs become one input per element; optional inputs become their element (present)
// or go away (absent). Both keep their old value, resolved (ir::Value::elements), for the
// sequence operators that read it.
Status ResolveContainerInputs(ir::Graph& g, const std::map<std::string, std::vector<int64_t>>& shapes, const ContainerShapes& c,
                              const std::string& names) {
  for (const auto& [name, _] : c.sequences) {
    const ir::Value* v = g.FindLocal(name);
    if (!v || v->kind() != ir::Value::Kind::kInput)
      return InvalidArgument("--shape names '" + name + "', which is not a model input (inputs: " + names + ")");
  }
  for (const std::string& name : c.absent) {
    const ir::Value* v = g.FindLocal(name);
    if (!v || v->kind() != ir::Value::Kind::kInput)
      return InvalidArgument("--shape names '" + name + "', which is not a model input (inputs: " + names + ")");
    if (v->type().kind() != ir::Type::Kind::kOptional) return InvalidArgument("input '" + name + "' is not optional: it cannot be none");
  }
  std::vector<ir::Value*> inputs = g.inputs();
  for (ir::Value* v : inputs) {
    const ir::Type& declared = v->type();
    if (declared.is_tensor() || declared.is_unknown()) continue;
    const std::string name = v->name();
    bool optional = declared.kind() == ir::Type::Kind::kOptional;
    if (optional && c.absent.count(name)) {
      g.ReplaceInput(v, {});
      v->set_elements({});
      continue;
    }
    ir::Type inner = optional ? declared.element() : declared;
    if (inner.is_tensor()) {  // a present optional tensor: an ordinary input
      if (c.sequences.count(name)) return InvalidArgument("input '" + name + "' is an optional tensor, not a sequence");
      ir::Type t = inner;
      if (auto it = shapes.find(name); it != shapes.end()) {
        PRECIS_RETURN_IF_ERROR(CheckDims(name, it->second));
        PRECIS_RETURN_IF_ERROR(CheckAgainst("input '" + name + "'", inner, it->second));
        t = ir::Type::Tensor(inner.dtype(), ir::Shape::FromStatic(it->second));
      }
      g.Rename(v, name + "/optional");
      std::vector<ir::Value*> added = g.ReplaceInput(v, {{name, t}});
      v->set_elements(added);
      continue;
    }
    if (inner.kind() != ir::Type::Kind::kSequence || !inner.element().is_tensor())
      return Unimplemented("input '" + name + "' has type " + ir::PrintType(declared) + "; Precis takes tensors, sequences of tensors and optionals of either");
    auto it = c.sequences.find(name);
    if (it == c.sequences.end())
      return InvalidArgument("input '" + name + "' is a sequence: give the shapes of its elements with --shape " + name +
                             "=[2x3,4] (Precis fixes a sequence's length when it compiles)");
    if (shapes.count(name)) return InvalidArgument("input '" + name + "' is a sequence: its --shape is a list of element shapes, [2x3,4]");
    const ir::Type& element = inner.element();
    std::vector<std::pair<std::string, ir::Type>> parts;
    for (size_t i = 0; i < it->second.size(); ++i) {
      const std::vector<int64_t>& dims = it->second[i];
      PRECIS_RETURN_IF_ERROR(CheckDims(name, dims));
      PRECIS_RETURN_IF_ERROR(CheckAgainst("element " + std::to_string(i) + " of input '" + name + "'", element, dims));
      if (g.FindLocal(ElementName(name, i))) return InvalidArgument("input '" + name + "': the model already has a value named '" + ElementName(name, i) + "'");
      parts.push_back({ElementName(name, i), ir::Type::Tensor(element.dtype(), ir::Shape::FromStatic(dims))});
    }
    if (!optional) {
      v->set_elements(g.ReplaceInput(v, parts));
      continue;
    }
    // A present optional sequence: its element is the sequence (a value of its own).
    g.Rename(v, name + "/optional");
    ir::Value* seq = g.NewValue(name);
    seq->set_type(inner);
    v->set_elements({seq});
    seq->set_elements(g.ReplaceInput(v, parts));
  }
  return Status::Ok();
}

}  // namespace

Status SpecializeInputs(ir::Model& model, const std::map<std::string, std::vector<int64_t>>& shapes,
                        std::map<std::string, ir::Tensor> values, const ContainerShapes& containers) {
  ir::Graph& g = *model.graph;
  std::string names;
  for (const ir::Value* v : g.inputs()) names += (names.empty() ? "" : ", ") + v->name();
  PRECIS_RETURN_IF_ERROR(ResolveContainerInputs(g, shapes, containers, names));
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
