// CompileTraining (see train.h): weights and running statistics to state, the evaluation graph
// (inference form) and the training form of the forward graph, the loss on both, autodiff, the
// optimizer, and the two programs of a training plan, each over its own graph.
#include "compiler/driver/train.h"

#include <cstdio>
#include <cstring>
#include <regex>
#include <set>

#include "compiler/driver/train_forward.h"
#include "compiler/driver/lr_schedule.h"
#include "compiler/ir/json_writer.h"
#include "compiler/ir/text.h"
#include "compiler/ops/gradient.h"
#include "passes/autodiff.h"
#include "passes/infer_shapes.h"
#include "passes/specialize_inputs.h"

namespace precis::driver {
namespace {

int64_t OpsetOf(const ir::Model& model) {
  auto it = model.opsets.find("");
  return it == model.opsets.end() ? 1 : it->second;
}

std::vector<int64_t> StaticDims(const ir::Value& v) {
  std::vector<int64_t> dims;
  for (const ir::Dim& d : v.type().shape().dims()) dims.push_back(d.value());
  return dims;
}

// Float initializers are the model's weights; ONNX-internal constants (folded shapes, scalars of
// formulas, exporter-made names) are not.
bool IsWeight(const ir::Value& v) {
  if (!v.is_constant() || !ir::IsFloat(v.type().dtype()) || !v.data() || v.data()->NumElements() < 2) return false;
  const std::string& n = v.name();
  return n.rfind("onnx::", 0) != 0 && n.rfind("/", 0) != 0 && n.find("Constant") == std::string::npos;
}

// A state input holding `dims` of `value` (optimizer moments, counters).
ir::Value* StateInput(ir::Graph& g, const std::string& name, const std::vector<int64_t>& dims, float value) {
  int64_t n = 1;
  for (int64_t d : dims) n *= d;
  std::vector<float> data(size_t(n), value);
  std::vector<uint8_t> bytes(data.size() * 4);
  if (!bytes.empty()) std::memcpy(bytes.data(), data.data(), bytes.size());
  return g.AddInputWithDefault(name, ir::Type::Tensor(ir::DType::kF32, ir::Shape::FromStatic(dims)),
                               ir::Tensor(ir::DType::kF32, dims, ir::Buffer::Own(std::move(bytes))));
}

class TrainingAssembler {
 public:
  TrainingAssembler(ir::Model& model, const TrainOptions& o) : model_(model), g_(*model.graph), o_(o), opset_(OpsetOf(model)) {}

  // The forward graph is cloned, after the weights and running statistics become state inputs,
  // into the evaluation graph (inference form, eval_step); the model's own graph takes the
  // training form (batch statistics, active Dropout) and gets the gradients and the optimizer.
  StatusOr<TrainPlan> Run() {
    PRECIS_RETURN_IF_ERROR(CheckOptions());
    PRECIS_RETURN_IF_ERROR(passes::SpecializeInputs(model_, o_.shapes));
    PRECIS_RETURN_IF_ERROR(ChooseWeights());
    PRECIS_RETURN_IF_ERROR(BuildEvaluationGraph());
    PRECIS_ASSIGN_OR_RETURN(TrainingForm form, ToTrainingForm(g_, opset_, kDropoutSeed, kDropoutCounter));
    PRECIS_RETURN_IF_ERROR(passes::InferShapesAndFold(model_).status());
    PRECIS_RETURN_IF_ERROR(AddRunningStatisticUpdates(g_, opset_, form, updates_));
    for (const auto& [next, state] : updates_) state_.push_back(state);
    if (form.dropouts > 0) AdvanceDropoutCounter();
    result_.forward_nodes = int(g_.nodes().size());
    PRECIS_ASSIGN_OR_RETURN(ir::Value * raw_loss, AddLoss(g_));
    ir::Value* loss = NameLoss(g_, raw_loss, "");
    PRECIS_ASSIGN_OR_RETURN(ir::Value * raw_eval_loss, AddLoss(*eval_.graph));
    NameLoss(*eval_.graph, raw_eval_loss, loss->name());
    PRECIS_ASSIGN_OR_RETURN(passes::GradientResult grads, passes::BuildGradients(model_, loss->name(), result_.weights));
    result_.backward_nodes = grads.backward_nodes;
    size_t before = g_.nodes().size();
    AddOptimizer(grads);
    if (o_.gradient_outputs) PRECIS_RETURN_IF_ERROR(AddGradientOutputs(grads));
    std::string lr = NamePublic(g_.FindLocal(lr_), "lr")->name();
    result_.optimizer_nodes = int(g_.nodes().size() - before);
    PRECIS_RETURN_IF_ERROR(passes::InferShapesAndFold(model_).status());
    return Emit(loss->name(), lr);
  }

 private:
  Status CheckOptions() {
    if (o_.loss != "cross-entropy" && o_.loss != "mse" && o_.loss != "output")
      return InvalidArgument("unknown loss '" + o_.loss + "' (cross-entropy, mse or output)");
    if (o_.optimizer != "sgd" && o_.optimizer != "adamw") return InvalidArgument("unknown optimizer '" + o_.optimizer + "' (sgd or adamw)");
    if (!(o_.lr > 0)) return InvalidArgument("the learning rate must be positive");
    PRECIS_RETURN_IF_ERROR(CheckLrSchedule(o_.schedule));
    if (o_.loss != "output" && g_.FindLocal(o_.label)) return InvalidArgument("the label name '" + o_.label + "' is already a value of the model");
    return Status::Ok();
  }

  Status ChooseWeights() {
    std::regex freeze;
    if (!o_.freeze.empty()) {
      try {
        freeze = std::regex(o_.freeze);
      } catch (const std::regex_error& e) {
        return InvalidArgument("--freeze: bad regular expression '" + o_.freeze + "': " + e.what());
      }
    }
    // BatchNormalization's running statistics are state updated by train_step, never trained.
    std::set<std::string> running = RunningStatistics(g_);
    std::vector<ir::Value*> weights, stats;
    for (ir::Value* v : g_.constants()) {
      if (running.count(v->name())) stats.push_back(v);
      else if (IsWeight(*v)) weights.push_back(v);
    }
    for (ir::Value* v : stats) {
      g_.ConvertConstantToInput(v);
      result_.running_statistics.push_back(v->name());
    }
    for (ir::Value* v : weights) {
      if (!o_.freeze.empty() && std::regex_search(v->name(), freeze)) {
        result_.frozen.push_back(v->name());
        continue;
      }
      g_.ConvertConstantToInput(v);
      result_.weights.push_back(v->name());
    }
    if (result_.weights.empty())
      return InvalidArgument(result_.frozen.empty() ? "the model has no trainable weights (no float initializers)"
                                                    : "every weight matches --freeze '" + o_.freeze + "': nothing to train");
    return Status::Ok();
  }

  // The evaluation graph: a clone of the forward graph in inference form, shapes inferred.
  Status BuildEvaluationGraph() {
    eval_.opsets = model_.opsets;
    eval_.ir_version = model_.ir_version;
    PRECIS_ASSIGN_OR_RETURN(eval_.graph, CloneGraph(g_));
    PRECIS_RETURN_IF_ERROR(ToEvaluationForm(*eval_.graph));
    PRECIS_RETURN_IF_ERROR(passes::InferShapesAndFold(eval_).status());
    for (const ir::Value* v : eval_.graph->outputs()) model_outputs_.push_back(v->name());
    return Status::Ok();
  }

  // Each train_step draws new Dropout masks: the counter the masks are keyed by moves on.
  void AdvanceDropoutCounter() {
    ir::Value* counter = g_.FindLocal(kDropoutCounter);
    std::vector<uint8_t> one(8);
    int64_t v = 1;
    std::memcpy(one.data(), &v, 8);
    ir::Value* step = g_.AddConstant(kDropoutCounter + std::string(".one"), ir::Tensor(ir::DType::kI64, {}, ir::Buffer::Own(std::move(one))));
    ops::IrBuilder b(g_, opset_, "dropout", "the dropout counter");
    Update(b.Op("Add", {counter, step}), kDropoutCounter);
    state_.push_back(kDropoutSeed);
  }

  StatusOr<ir::Value*> ModelOutput(ir::Graph& g) {
    if (o_.loss_output.empty()) {
      if (g.outputs().size() != 1)
        return InvalidArgument("the model has " + std::to_string(g.outputs().size()) + " outputs: name the one the loss reads with --loss-output");
      return g.outputs()[0];
    }
    for (ir::Value* v : g.outputs())
      if (v->name() == o_.loss_output) return v;
    return InvalidArgument("--loss-output '" + o_.loss_output + "' is not an output of the model");
  }

  StatusOr<ir::Value*> AddLoss(ir::Graph& g) {
    PRECIS_ASSIGN_OR_RETURN(ir::Value * out, ModelOutput(g));
    const ir::Type& t = out->type();
    if (!t.is_tensor() || !t.shape().is_static() || (t.dtype() != ir::DType::kF32))
      return InvalidArgument("the loss reads output '" + out->name() + "' of type " + ir::PrintType(t) + ": FP32 training needs an f32 tensor of static shape");
    std::vector<int64_t> dims = StaticDims(*out);
    ops::IrBuilder b(g, opset_, "loss", "the loss");
    if (o_.loss == "output") {
      if (dims.size() > 1 || (dims.size() == 1 && dims[0] != 1))
        return InvalidArgument("--loss output: output '" + out->name() + "' has shape " + ir::PrintType(t) + ", not a scalar");
      return dims.empty() ? out : b.Op("Reshape", {out, b.Int64s({})});
    }
    if (o_.loss == "mse") {
      ir::Value* label = g.AddInput(o_.label, t);
      ir::Value* d = b.Op("Sub", {out, label});
      return b.Op("ReduceMean", {b.Op("Mul", {d, d})}, {ops::GradAttr::Int("keepdims", 0)});
    }
    if (dims.size() < 2) return InvalidArgument("cross-entropy reads logits [N, C] or [N, C, d...]; output '" + out->name() + "' has shape " + ir::PrintType(t));
    if (opset_ < 13) return Unimplemented("cross-entropy training needs opset 13 or newer (the model has " + std::to_string(opset_) + ")");
    std::vector<int64_t> label_dims = dims;
    label_dims.erase(label_dims.begin() + 1);
    ir::Value* label = g.AddInput(o_.label, ir::Type::Tensor(ir::DType::kI64, ir::Shape::FromStatic(label_dims)));
    return b.Op("SoftmaxCrossEntropyLoss", {out, label}, Attrs());
  }

  // The loss under its public name, "loss" (or "loss1"... when the model uses that name), or
  // under `name` when given (the evaluation graph's loss takes the training graph's name).
  ir::Value* NameLoss(ir::Graph& g, ir::Value* loss, std::string name) {
    if (name.empty()) {
      name = "loss";
      for (int i = 1; g.FindLocal(name) || eval_.graph->FindLocal(name); ++i) name = "loss" + std::to_string(i);
    }
    ir::Value* named = g.NewValue(name);
    named->set_type(loss->type());
    g.AddNode("", "Identity", "loss", {loss}, {named}, {});
    return named;
  }

  // `v` under a public name, `base` (or base1... when the model uses that name).
  ir::Value* NamePublic(ir::Value* v, const std::string& base) {
    std::string name = base;
    for (int i = 1; g_.FindLocal(name); ++i) name = base + std::to_string(i);
    ir::Value* named = g_.NewValue(name);
    named->set_type(v->type());
    g_.AddNode("", "Identity", base, {v}, {named}, {});
    return named;
  }

  std::vector<ops::GradAttr> Attrs() const {
    std::vector<ops::GradAttr> attrs;
    if (o_.has_ignore_index) attrs.push_back(ops::GradAttr::Int("ignore_index", o_.ignore_index));
    return attrs;
  }

  // Each weight's gradient under the name "<weight>.grad", an output of train_step (for tests and
  // debugging: comparing with another framework's gradients).
  Status AddGradientOutputs(const passes::GradientResult& grads) {
    for (const std::string& w : result_.weights) {
      std::string name = w + ".grad";
      if (g_.FindLocal(name)) return InvalidArgument("cannot expose the gradient of '" + w + "': the model already has a value '" + name + "'");
      ir::Value* g = grads.grads.at(w);
      ir::Value* out = g_.NewValue(name);
      out->set_type(g->type());
      g_.AddNode("", "Identity", name, {g}, {out}, {});
      gradient_outputs_.push_back(name);
    }
    return Status::Ok();
  }

  // torch.optim formulas, in FP32 over the tensors; the scalars (lr, bias corrections, decay
  // factor) in f64 as torch's Python floats, each rounded to f32 once. SGD: g += wd*p; buf =
  // momentum*buf + g; d = nesterov ? g + momentum*buf : buf; p -= lr*d. AdamW: p *= 1 - lr*wd; m =
  // b1*m + (1-b1)*g; v = b2*v + (1-b2)*g^2; t += 1; p -= lr/(1-b1^t) * m / (sqrt(v)/sqrt(1-b2^t) + eps).
  // The lr follows the schedule (lr_schedule.h) from the steps applied before this one.
  void AddOptimizer(const passes::GradientResult& grads) {
    ops::IrBuilder b(g_, opset_, "optimizer", "the optimizer");
    const ir::DType f = ir::DType::kF32, d64 = ir::DType::kF64;
    auto to = [&](ir::Value* v, ir::DType t) { return b.Op("Cast", {v}, {ops::GradAttr::Int("to", int64_t(ir::DTypeToOnnx(t)))}); };
    ir::Value* base_lr = StateInput(g_, "optimizer.lr", {}, float(o_.lr));
    ir::Value* step = StateInput(g_, "optimizer.step", {}, 0.0f);
    state_.insert(state_.end(), {"optimizer.lr", "optimizer.step"});
    ir::Value* total = nullptr;
    if (NeedsTotalSteps(o_.schedule)) {
      total = StateInput(g_, "optimizer.total_steps", {}, float(o_.schedule.total_steps));
      state_.push_back("optimizer.total_steps");
    }
    ir::Value* lr64 = ScheduledLr(b, o_.schedule, base_lr, step, total);
    ir::Value* lr = to(lr64, f);
    lr_ = lr->name();
    ir::Value* t = b.Op("Add", {step, b.Scalar(1.0, f)});
    updates_[t->name()] = "optimizer.step";
    ir::Value *step_size = nullptr, *bc2_sqrt = nullptr, *decay = nullptr;
    if (o_.optimizer == "adamw") {
      ir::Value* t64 = to(t, d64);
      ir::Value* bc1 = b.Op("Sub", {b.Scalar(1.0, d64), b.Op("Pow", {b.Scalar(o_.beta1, d64), t64})});
      step_size = to(b.Op("Div", {lr64, bc1}), f);
      bc2_sqrt = to(b.Op("Sqrt", {b.Op("Sub", {b.Scalar(1.0, d64), b.Op("Pow", {b.Scalar(o_.beta2, d64), t64})})}), f);
      if (o_.weight_decay != 0) decay = to(b.Op("Sub", {b.Scalar(1.0, d64), b.Op("Mul", {lr64, b.Scalar(o_.weight_decay, d64)})}), f);
    }
    for (const std::string& name : result_.weights) {
      ir::Value* p = g_.FindLocal(name);
      ir::Value* g = grads.grads.at(name);
      std::vector<int64_t> dims = StaticDims(*p);
      ir::Value* next = nullptr;
      if (o_.optimizer == "sgd") {
        if (o_.weight_decay != 0) g = b.Op("Add", {g, b.Op("Mul", {p, b.Scalar(o_.weight_decay, f)})});
        ir::Value* d = g;
        if (o_.momentum != 0) {
          ir::Value* buf = StateInput(g_, name + ".momentum_buffer", dims, 0.0f);
          ir::Value* buf_next = b.Op("Add", {b.Op("Mul", {buf, b.Scalar(o_.momentum, f)}), g});
          Update(buf_next, buf->name());
          d = o_.nesterov ? b.Op("Add", {g, b.Op("Mul", {buf_next, b.Scalar(o_.momentum, f)})}) : buf_next;
        }
        next = b.Op("Sub", {p, b.Op("Mul", {d, lr})});
      } else {
        ir::Value* m = StateInput(g_, name + ".exp_avg", dims, 0.0f);
        ir::Value* v = StateInput(g_, name + ".exp_avg_sq", dims, 0.0f);
        ir::Value* m_next = b.Op("Add", {b.Op("Mul", {m, b.Scalar(o_.beta1, f)}), b.Op("Mul", {g, b.Scalar(1 - o_.beta1, f)})});
        ir::Value* v_next = b.Op("Add", {b.Op("Mul", {v, b.Scalar(o_.beta2, f)}), b.Op("Mul", {b.Op("Mul", {g, g}), b.Scalar(1 - o_.beta2, f)})});
        Update(m_next, m->name());
        Update(v_next, v->name());
        ir::Value* base = decay ? b.Op("Mul", {p, decay}) : p;
        ir::Value* denom = b.Op("Add", {b.Op("Div", {b.Op("Sqrt", {v_next}), bc2_sqrt}), b.Scalar(o_.eps, f)});
        next = b.Op("Sub", {base, b.Op("Mul", {step_size, b.Op("Div", {m_next, denom})})});
      }
      Update(next, name);
    }
  }

  void Update(ir::Value* next, const std::string& state) {
    updates_[next->name()] = state;
    state_.push_back(state);
  }

  StatusOr<TrainPlan> Emit(const std::string& loss, const std::string& lr) {
    std::vector<emit::ProgramSource> programs(2);
    programs[0].name = "train_step";
    programs[0].graph = &g_;
    programs[0].outputs = {loss, lr};
    for (const std::string& g : gradient_outputs_) programs[0].outputs.push_back(g);
    programs[0].state_updates = updates_;
    programs[1].name = "eval_step";
    programs[1].graph = eval_.graph.get();
    programs[1].outputs = {loss};
    for (const std::string& out : model_outputs_)
      if (out != loss) programs[1].outputs.push_back(out);
    emit::EmitOptions options;
    options.precision = "fp32";
    for (const std::string& w : result_.weights) options.state.insert(w);
    for (const std::string& s : state_) options.state.insert(s);
    if (o_.source_model) {
      PRECIS_ASSIGN_OR_RETURN(options.source_model, o_.source_model(options.state));
    }
    options.training_config = TrainingConfigJson(o_);
    PRECIS_ASSIGN_OR_RETURN(result_.plan, emit::EmitPrograms(model_, programs, options));
    return std::move(result_);
  }

  static constexpr const char* kDropoutSeed = "dropout.seed";
  static constexpr const char* kDropoutCounter = "dropout.counter";

  ir::Model& model_;
  ir::Model eval_;  // the evaluation graph (inference form), eval_step's
  ir::Graph& g_;
  const TrainOptions& o_;
  int64_t opset_;
  TrainPlan result_;
  std::string lr_;  // the f32 lr of the current step
  std::vector<std::string> model_outputs_, state_;
  std::map<std::string, std::string> updates_;  // new value -> the state it overwrites
  std::vector<std::string> gradient_outputs_;
};

std::string Number(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.17g", v);
  return buf;
}

}  // namespace

std::string TrainingConfigJson(const TrainOptions& o) {
  std::string j = "{\"loss\": " + ir::JsonEscape(o.loss) + ", \"label\": " + ir::JsonEscape(o.label) + ", \"optimizer\": " + ir::JsonEscape(o.optimizer) +
                  ", \"lr\": " + Number(o.lr);
  if (o.optimizer == "sgd") j += ", \"momentum\": " + Number(o.momentum) + ", \"nesterov\": " + (o.nesterov ? "true" : "false");
  else j += ", \"betas\": [" + Number(o.beta1) + ", " + Number(o.beta2) + "], \"eps\": " + Number(o.eps);
  j += ", \"weight_decay\": " + Number(o.weight_decay) + ", \"lr_schedule\": " + ir::JsonEscape(o.schedule.kind) +
       ", \"warmup_steps\": " + std::to_string(o.schedule.warmup_steps);
  if (o.schedule.warmup_steps) j += ", \"warmup_start_factor\": " + Number(o.schedule.warmup_start_factor);
  if (o.schedule.kind == "cosine") j += ", \"lr_total_steps\": " + std::to_string(o.schedule.total_steps) + ", \"lr_min\": " + Number(o.schedule.eta_min);
  if (o.schedule.kind == "step") j += ", \"lr_step_size\": " + std::to_string(o.schedule.step_size) + ", \"lr_gamma\": " + Number(o.schedule.gamma);
  if (!o.freeze.empty()) j += ", \"freeze\": " + ir::JsonEscape(o.freeze);
  return j + "}";
}

StatusOr<TrainPlan> CompileTraining(ir::Model& model, const TrainOptions& options) { return TrainingAssembler(model, options).Run(); }

}  // namespace precis::driver
