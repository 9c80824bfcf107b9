// BuildGradients (see autodiff.h): find the nodes between the chosen values and the loss, check
// that each has a gradient rule, then walk them in reverse order, summing each value's gradient
// contributions before its producer's rule reads them.
#include "passes/autodiff.h"

#include <algorithm>
#include <cstring>
#include <set>
#include <unordered_map>

#include "compiler/ir/dtype.h"
#include "compiler/ir/text.h"
#include "compiler/ops/gradient.h"

namespace precis::passes {
namespace {

int64_t OpsetOf(const ir::Model& model) {
  auto it = model.opsets.find("");
  return it == model.opsets.end() ? 1 : it->second;
}

// A constant of `v`'s static shape and dtype filled with `value` (f32 or f64).
ir::Value* Filled(ir::Graph& g, const ir::Value& v, double value, const std::string& name) {
  std::vector<int64_t> dims;
  for (const ir::Dim& d : v.type().shape().dims()) dims.push_back(d.value());
  int64_t n = 1;
  for (int64_t d : dims) n *= d;
  ir::DType t = v.type().dtype();
  std::vector<uint8_t> bytes(size_t(n) * size_t(ir::DTypeSize(t)));
  for (int64_t i = 0; i < n; ++i) {
    if (t == ir::DType::kF64) std::memcpy(bytes.data() + i * 8, &value, 8);
    else {
      float f = float(value);
      std::memcpy(bytes.data() + i * 4, &f, 4);
    }
  }
  std::string fresh = name;
  for (int i = 1; g.FindLocal(fresh); ++i) fresh = name + std::to_string(i);
  return g.AddConstant(fresh, ir::Tensor(t, dims, ir::Buffer::Own(std::move(bytes))));
}

class Differentiator {
 public:
  Differentiator(ir::Model& model) : model_(model), g_(*model.graph), opset_(OpsetOf(model)) {}

  StatusOr<GradientResult> Run(const std::string& loss_name, const std::vector<std::string>& wrt) {
    ir::Value* loss = g_.FindLocal(loss_name);
    if (!loss) return InvalidArgument("autodiff: no value named '" + loss_name + "' (the loss)");
    const ir::Type& lt = loss->type();
    if (!lt.is_tensor() || (lt.dtype() != ir::DType::kF32 && lt.dtype() != ir::DType::kF64) || !lt.shape().is_static())
      return InvalidArgument("autodiff: the loss '" + loss_name + "' must be an f32 or f64 tensor of static shape, not " + ir::PrintType(lt));
    std::vector<ir::Value*> targets;
    for (const std::string& name : wrt) {
      ir::Value* v = g_.FindLocal(name);
      if (!v) return InvalidArgument("autodiff: no value named '" + name + "' to differentiate with respect to");
      if (!ir::IsFloat(v->type().dtype())) return InvalidArgument("autodiff: '" + name + "' is not a float tensor");
      targets.push_back(v);
    }
    PRECIS_RETURN_IF_ERROR(FindActiveNodes(targets, loss));
    contributions_[loss].push_back(Filled(g_, *loss, 1.0, loss_name + "_seed"));
    size_t before = g_.nodes().size();
    for (auto it = active_.rbegin(); it != active_.rend(); ++it) Backward(**it);
    GradientResult result;
    for (ir::Value* v : targets) {
      ir::Value* grad = Total(v);
      result.grads[v->name()] = grad ? grad : Filled(g_, *v, 0.0, v->name() + "_zero_grad");
    }
    result.backward_nodes = int(g_.nodes().size() - before);
    return result;
  }

 private:
  // Nodes fed (transitively) by a target and feeding the loss, in forward order; every one
  // without a rule is reported in one error.
  Status FindActiveNodes(const std::vector<ir::Value*>& targets, ir::Value* loss) {
    for (ir::Value* v : targets) depends_.insert(v);
    // Only float values carry gradients: comparisons, shapes and indices stop the flow.
    for (const auto& n : g_.nodes())
      for (ir::Value* in : n->inputs())
        if (in && depends_.count(in))
          for (ir::Value* out : n->outputs())
            if (out && ir::IsFloat(out->type().dtype())) depends_.insert(out);
    std::set<const ir::Value*> needed{loss};
    for (auto it = g_.nodes().rbegin(); it != g_.nodes().rend(); ++it) {
      ir::Node* n = it->get();
      bool feeds = false;
      for (ir::Value* out : n->outputs()) feeds = feeds || (out && needed.count(out));
      if (!feeds) continue;
      for (ir::Value* in : n->inputs())
        if (in) needed.insert(in);
    }
    std::string missing;
    for (const auto& n : g_.nodes()) {
      bool on_path = false;
      for (ir::Value* out : n->outputs()) on_path = on_path || (out && depends_.count(out) && needed.count(out));
      if (!on_path) continue;
      const ops::GradRule* rule = n->domain().empty() ? ops::FindGradRule(n->op_type(), opset_) : nullptr;
      const char* refusal = rule && rule->refuse ? rule->refuse(*n) : nullptr;
      if (!rule || refusal) {
        missing += (missing.empty() ? "" : ", ") + n->Describe() + (refusal ? std::string(" (") + refusal + ")" : "");
        continue;
      }
      active_.push_back(n.get());
    }
    if (!missing.empty()) return Unimplemented("autodiff: no gradient rule for " + missing);
    return Status::Ok();
  }

  // The sum of a value's gradient contributions (nullptr when none flows).
  ir::Value* Total(ir::Value* v) {
    auto it = contributions_.find(v);
    if (it == contributions_.end() || it->second.empty()) return nullptr;
    std::vector<ir::Value*>& parts = it->second;
    while (parts.size() > 1) {
      ir::Value* sum = g_.NewValue(Fresh(v->name() + "_grad_sum"));
      sum->set_type(v->type());
      g_.AddNode("", "Add", Fresh(v->name() + "/grad_sum"), {parts[0], parts[1]}, {sum}, {});
      parts.erase(parts.begin(), parts.begin() + 2);
      parts.insert(parts.begin(), sum);
    }
    return parts[0];
  }

  void Backward(const ir::Node& n) {
    std::vector<ir::Value*> grads;
    bool any = false;
    for (ir::Value* out : n.outputs()) {
      grads.push_back(out ? Total(out) : nullptr);
      any = any || grads.back();
    }
    if (!any) return;
    const ops::GradRule* rule = ops::FindGradRule(n.op_type(), opset_);
    std::vector<bool> wanted;
    for (size_t i = 0; i < n.inputs().size(); ++i) {
      const ir::Value* in = n.inputs()[i];
      bool non_diff = std::find(rule->non_differentiable.begin(), rule->non_differentiable.end(), int(i)) != rule->non_differentiable.end();
      wanted.push_back(in && !non_diff && depends_.count(in) && ir::IsFloat(in->type().dtype()));
    }
    // Rules read the first output's gradient; when only another output carries one, the first's
    // is zeros. Later outputs without a gradient stay nullptr (an unused extra output).
    if (!grads[0] && n.outputs()[0]) grads[0] = Filled(g_, *n.outputs()[0], 0.0, "zero_grad");
    ops::GradContext ctx(g_, n, opset_, grads, wanted);
    std::vector<ir::Value*> in_grads = rule->fn(ctx);
    for (size_t i = 0; i < in_grads.size() && i < wanted.size(); ++i)
      if (wanted[i] && in_grads[i]) contributions_[n.inputs()[i]].push_back(in_grads[i]);
  }

  std::string Fresh(const std::string& base) {
    std::string name = base;
    for (int i = 1; g_.FindLocal(name); ++i) name = base + std::to_string(i);
    return name;
  }

  ir::Model& model_;
  ir::Graph& g_;
  int64_t opset_;
  std::set<const ir::Value*> depends_;
  std::vector<ir::Node*> active_;
  std::unordered_map<ir::Value*, std::vector<ir::Value*>> contributions_;
};

}  // namespace

StatusOr<GradientResult> BuildGradients(ir::Model& model, const std::string& loss, const std::vector<std::string>& wrt) {
  return Differentiator(model).Run(loss, wrt);
}

}  // namespace precis::passes
