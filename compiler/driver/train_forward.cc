// The training and evaluation forms of the forward graph (see train_forward.h). A rewritten node
// is replaced in place: the new node takes over the old one's output 0 (so value names, graph
// outputs and --loss-output keep working) and its position in the node order.
#include "compiler/driver/train_forward.h"

#include <algorithm>
#include <cstring>
#include <optional>

#include "compiler/ir/dtype.h"
#include "compiler/ops/gradient.h"
#include "passes/match.h"

namespace precis::driver {
namespace {

using passes::match::FloatAttr;
using passes::match::IntAttr;

std::string FreshName(const ir::Graph& g, const std::string& base) {
  std::string name = base;
  for (int i = 1; g.FindLocal(name); ++i) name = base + std::to_string(i);
  return name;
}

bool IsUsed(const ir::Graph& g, const ir::Value* v) {
  return v && (!v->uses().empty() || std::find(g.outputs().begin(), g.outputs().end(), v) != g.outputs().end());
}

StatusOr<std::vector<ir::Attribute>> CopyAttributes(const ir::Node& n, const std::set<std::string>& drop = {}) {
  std::vector<ir::Attribute> out;
  for (const ir::Attribute& a : n.attributes()) {
    if (!a.graphs.empty()) return Unimplemented(n.Describe() + ": training plans do not support subgraphs (If/Loop/Scan) yet");
    if (drop.count(a.name)) continue;
    out.push_back(ir::CloneAttribute(a, [](ir::Value* v) { return v; }));  // no subgraphs: a plain copy
  }
  return out;
}

std::vector<ir::Attribute> Attrs(ir::Attribute a, std::optional<ir::Attribute> b = std::nullopt) {
  std::vector<ir::Attribute> out;
  out.push_back(std::move(a));
  if (b) out.push_back(std::move(*b));
  return out;
}

// The value of a float scalar known before shape inference: an initializer or a Constant node.
std::optional<double> ConstantScalar(const ir::Value* v) {
  const ir::Tensor* t = v->data();
  if (!t && v->producer() && v->producer()->op_type() == "Constant") {
    const ir::Attribute* a = v->producer()->FindAttribute("value");
    if (a && a->kind == ir::Attribute::Kind::kTensor) t = &a->t;
  }
  if (!t || !t->has_data() || t->NumElements() != 1) return std::nullopt;
  if (t->dtype() == ir::DType::kF32) {
    float f;
    std::memcpy(&f, t->buffer().data(), 4);
    return f;
  }
  if (t->dtype() == ir::DType::kF64) {
    double d;
    std::memcpy(&d, t->buffer().data(), 8);
    return d;
  }
  return std::nullopt;
}

// Node replacements, applied together: each new node takes its old node's output 0 and place.
class Replacer {
 public:
  explicit Replacer(ir::Graph& g) : g_(g) {}

  ir::Node* Replace(ir::Node* old, const std::string& op, std::vector<ir::Value*> inputs, size_t extra_outputs,
                    std::vector<ir::Attribute> attrs) {
    ir::Value* y = old->outputs()[0];
    g_.SetNodeOutput(old, 0, g_.NewValue(FreshName(g_, y->name() + ".replaced")));
    std::vector<ir::Value*> outs{y};
    for (size_t i = 0; i < extra_outputs; ++i) outs.push_back(g_.NewValue(FreshName(g_, y->name() + "." + op + std::to_string(i + 1))));
    ir::Node* added = g_.AddNode("", op, old->name(), std::move(inputs), std::move(outs), std::move(attrs));
    replaced_[old] = added;
    return added;
  }

  void Finish() {
    std::set<ir::Node*> added;
    for (const auto& [old, n] : replaced_) added.insert(n);
    std::vector<ir::Node*> order;
    for (const auto& n : g_.nodes()) {
      if (added.count(n.get())) continue;
      if (auto it = replaced_.find(n.get()); it != replaced_.end()) order.push_back(it->second);
      order.push_back(n.get());
    }
    g_.SetNodeOrder(order);
    for (const auto& [old, n] : replaced_) g_.RemoveNode(old);
    replaced_.clear();
  }

 private:
  ir::Graph& g_;
  std::map<ir::Node*, ir::Node*> replaced_;
};

std::vector<ir::Node*> NodesOf(ir::Graph& g, const char* op) {
  std::vector<ir::Node*> out;
  for (const auto& n : g.nodes())
    if (n->domain().empty() && n->op_type() == op) out.push_back(n.get());
  return out;
}

Status CheckExtraOutputsUnused(const ir::Graph& g, const ir::Node& n, const char* what) {
  for (size_t i = 1; i < n.outputs().size(); ++i)
    if (IsUsed(g, n.outputs()[i]))
      return Unimplemented(n.Describe() + ": output " + std::to_string(i) + " (" + what + ") is read by the model; training plans compute it internally");
  return Status::Ok();
}

Status CheckBatchNorm(const ir::Graph& g, const ir::Node& n) {
  if (n.inputs().size() < 5) return InvalidArgument(n.Describe() + ": needs inputs X, scale, B, mean and var");
  const ir::Attribute* spatial = n.FindAttribute("spatial");
  if (spatial && spatial->i != 1) return Unimplemented(n.Describe() + ": spatial=0 (per-activation statistics) cannot be trained");
  return CheckExtraOutputsUnused(g, n, "running or saved statistics");
}

StatusOr<double> DropoutRatio(const ir::Node& n, int64_t opset) {
  double ratio = 0.5;
  if (opset < 12) {
    if (const ir::Attribute* a = n.FindAttribute("ratio")) ratio = a->f;
  } else if (n.inputs().size() > 1 && n.inputs()[1]) {
    std::optional<double> r = ConstantScalar(n.inputs()[1]);
    if (!r) return Unimplemented(n.Describe() + ": the ratio must be a constant for training");
    ratio = *r;
  }
  if (!(ratio >= 0 && ratio < 1)) return InvalidArgument(n.Describe() + ": ratio " + std::to_string(ratio) + " is outside [0, 1)");
  return ratio;
}

ir::Value* I64Scalar(ir::Graph& g, const std::string& name, int64_t value) {
  std::vector<uint8_t> bytes(8);
  std::memcpy(bytes.data(), &value, 8);
  return g.AddInputWithDefault(name, ir::Type::Tensor(ir::DType::kI64, ir::Shape::FromStatic({})),
                               ir::Tensor(ir::DType::kI64, {}, ir::Buffer::Own(std::move(bytes))));
}

}  // namespace

std::set<std::string> RunningStatistics(const ir::Graph& g) {
  std::set<std::string> out;
  for (const auto& n : g.nodes())
    if (n->domain().empty() && n->op_type() == "BatchNormalization")
      for (size_t i = 3; i < 5 && i < n->inputs().size(); ++i)
        if (n->inputs()[i]) out.insert(n->inputs()[i]->name());
  return out;
}

StatusOr<std::unique_ptr<ir::Graph>> CloneGraph(const ir::Graph& g) {
  auto out = std::make_unique<ir::Graph>(g.name());
  std::map<const ir::Value*, ir::Value*> map;
  for (const ir::Value* v : g.inputs())
    map[v] = v->data() ? out->AddInputWithDefault(v->name(), v->type(), *v->data()) : out->AddInput(v->name(), v->type());
  for (const ir::Value* v : g.constants()) map[v] = out->AddConstant(v->name(), *v->data());
  for (const auto& n : g.nodes()) {
    PRECIS_ASSIGN_OR_RETURN(auto attrs, CopyAttributes(*n));
    std::vector<ir::Value*> ins, outs;
    for (const ir::Value* in : n->inputs()) ins.push_back(in ? map.at(in) : nullptr);
    for (const ir::Value* o : n->outputs()) {
      ir::Value* c = nullptr;
      if (o) {
        c = out->NewValue(o->name());
        c->set_type(o->type());
        map[o] = c;
      }
      outs.push_back(c);
    }
    out->AddNode(n->domain(), n->op_type(), n->name(), std::move(ins), std::move(outs), std::move(attrs));
  }
  for (const ir::Value* v : g.outputs()) out->AddOutput(map.at(v));
  return out;
}

Status ToEvaluationForm(ir::Graph& g) {
  Replacer r(g);
  for (ir::Node* n : NodesOf(g, "BatchNormalization")) {
    PRECIS_RETURN_IF_ERROR(CheckBatchNorm(g, *n));
    if (n->outputs().size() == 1 && !n->FindAttribute("training_mode")) continue;
    PRECIS_ASSIGN_OR_RETURN(auto attrs, CopyAttributes(*n, {"training_mode"}));
    r.Replace(n, "BatchNormalization", n->inputs(), 0, std::move(attrs));
  }
  for (ir::Node* n : NodesOf(g, "Dropout")) {
    PRECIS_RETURN_IF_ERROR(CheckExtraOutputsUnused(g, *n, "mask"));
    r.Replace(n, "Identity", {n->inputs()[0]}, 0, {});
  }
  r.Finish();
  return Status::Ok();
}

StatusOr<TrainingForm> ToTrainingForm(ir::Graph& g, int64_t opset, const std::string& seed, const std::string& counter) {
  TrainingForm form;
  Replacer r(g);
  for (ir::Node* n : NodesOf(g, "BatchNormalization")) {
    PRECIS_RETURN_IF_ERROR(CheckBatchNorm(g, *n));
    const ir::Attribute* eps = n->FindAttribute("epsilon");
    const ir::Attribute* momentum = n->FindAttribute("momentum");
    ir::Value *mean = n->inputs()[3], *var = n->inputs()[4];
    ir::Node* t = r.Replace(n, "BatchNormalizationTraining", {n->inputs()[0], n->inputs()[1], n->inputs()[2]}, 2,
                            Attrs(FloatAttr("epsilon", eps ? eps->f : 1e-5f)));
    form.norms.push_back({t, mean, var, momentum ? double(momentum->f) : 0.9});
  }
  ir::Value *seed_v = nullptr, *counter_v = nullptr;
  for (ir::Node* n : NodesOf(g, "Dropout")) {
    PRECIS_RETURN_IF_ERROR(CheckExtraOutputsUnused(g, *n, "mask"));
    PRECIS_ASSIGN_OR_RETURN(double ratio, DropoutRatio(*n, opset));
    if (ratio == 0) {
      r.Replace(n, "Identity", {n->inputs()[0]}, 0, {});
      continue;
    }
    if (!seed_v) {
      if (g.FindLocal(seed) || g.FindLocal(counter)) return InvalidArgument("the model already has a value named '" + seed + "' or '" + counter + "'");
      seed_v = I64Scalar(g, seed, 0);
      counter_v = I64Scalar(g, counter, 0);
    }
    r.Replace(n, "DropoutTraining", {n->inputs()[0], seed_v, counter_v}, 1,
              Attrs(FloatAttr("ratio", float(ratio)), IntAttr("stream", form.dropouts++)));
  }
  r.Finish();
  return form;
}

Status AddRunningStatisticUpdates(ir::Graph& g, int64_t opset, const TrainingForm& form, std::map<std::string, std::string>& updates) {
  for (const TrainingForm::Norm& norm : form.norms) {
    const ir::Node& n = *norm.node;
    for (const ir::Value* s : {norm.running_mean, norm.running_var})
      if (!s || s->kind() != ir::Value::Kind::kInput || !s->data())
        return Unimplemented(n.Describe() + ": the running statistics must be initializers (they become plan state)");
    ops::IrBuilder b(g, opset, (n.name().empty() ? "batchnorm" : n.name()) + "_running", "the running statistics of " + n.Describe());
    std::vector<int64_t> x = b.Dims(n.inputs()[0]);
    int64_t count = 1;
    for (size_t i = 0; i < x.size(); ++i)
      if (i != 1) count *= x[i];
    if (count < 2) return InvalidArgument(n.Describe() + ": a training batch needs more than one value per channel (the unbiased variance divides by n - 1)");
    auto blend = [&](ir::Value* running, ir::Value* batch, double batch_factor) {
      ir::DType t = b.Dtype(running);
      if (b.Dtype(batch) != t) batch = b.Op("Cast", {batch}, {ops::GradAttr::Int("to", int64_t(ir::DTypeToOnnx(t)))});
      ir::Value* next = b.Op("Add", {b.Op("Mul", {running, b.Scalar(norm.momentum, t)}), b.Op("Mul", {batch, b.Scalar(batch_factor, t)})});
      updates[next->name()] = running->name();
    };
    blend(norm.running_mean, n.outputs()[1], 1 - norm.momentum);
    blend(norm.running_var, n.outputs()[2], (1 - norm.momentum) * double(count) / double(count - 1));
  }
  return Status::Ok();
}

}  // namespace precis::driver
