// CompileTraining (see train.h): weights and running statistics to state, the evaluation graph
// (inference form) and the training form of the forward graph, the loss on both, autodiff, the
// optimizer, and the two programs of a training plan, each over its own graph.
#include "compiler/driver/train.h"

#include <cfloat>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <regex>
#include <set>
#include <unordered_set>

#include "compiler/driver/compile.h"
#include "compiler/driver/train_forward.h"
#include "compiler/emit/state_updates.h"
#include "compiler/ir/verifier.h"
#include "compiler/driver/lr_schedule.h"
#include "compiler/ir/json_writer.h"
#include "compiler/ir/text.h"
#include "compiler/ops/gradient.h"
#include "compiler/ops/op_registry.h"
#include "compiler/emit/precision_report.h"
#include "passes/autodiff.h"
#include "passes/fold_casts.h"
#include "passes/fuse_casts.h"
#include "passes/infer_shapes.h"
#include "passes/precision.h"
#include "passes/recognize_patterns.h"
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

// An i64 scalar state input (counters).
ir::Value* StateInputI64(ir::Graph& g, const std::string& name, int64_t value) {
  std::vector<uint8_t> bytes(8);
  std::memcpy(bytes.data(), &value, 8);
  return g.AddInputWithDefault(name, ir::Type::Tensor(ir::DType::kI64, ir::Shape::FromStatic({})),
                               ir::Tensor(ir::DType::kI64, {}, ir::Buffer::Own(std::move(bytes))));
}

ir::Value* I64Constant(ir::Graph& g, const std::string& name, int64_t value) {
  std::vector<uint8_t> bytes(8);
  std::memcpy(bytes.data(), &value, 8);
  std::string fresh = name;
  for (int i = 1; g.FindLocal(fresh); ++i) fresh = name + "." + std::to_string(i);
  return g.AddConstant(fresh, ir::Tensor(ir::DType::kI64, {}, ir::Buffer::Own(std::move(bytes))));
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
    PRECIS_RETURN_IF_ERROR(CheckStaticInputs());
    PRECIS_RETURN_IF_ERROR(ChooseWeights());
    PRECIS_RETURN_IF_ERROR(BuildEvaluationGraph());
    PRECIS_ASSIGN_OR_RETURN(TrainingForm form, ToTrainingForm(g_, opset_, kDropoutSeed, kDropoutCounter));
    PRECIS_RETURN_IF_ERROR(passes::InferShapesAndFold(model_).status());
    PRECIS_RETURN_IF_ERROR(AddRunningStatisticUpdates(g_, opset_, form, updates_));
    for (const auto& [next, state] : updates_) state_.push_back(state);
    if (form.dropouts > 0) AdvanceDropoutCounter();
    result_.forward_nodes = int(g_.nodes().size());
    size_t loss_begin = g_.nodes().size();
    PRECIS_ASSIGN_OR_RETURN(ir::Value * raw_loss, AddLoss(g_));
    ir::Value* loss = NameLoss(g_, raw_loss, "");
    for (size_t i = loss_begin; i < g_.nodes().size(); ++i) loss_nodes_.insert(g_.nodes()[i].get());
    loss_begin = eval_.graph->nodes().size();
    PRECIS_ASSIGN_OR_RETURN(ir::Value * raw_eval_loss, AddLoss(*eval_.graph));
    NameLoss(*eval_.graph, raw_eval_loss, loss->name());
    for (size_t i = loss_begin; i < eval_.graph->nodes().size(); ++i) loss_nodes_.insert(eval_.graph->nodes()[i].get());
    std::string target = loss->name();
    if (scaling_ != Scaling::kNone) target = ScaleLoss(loss)->name();
    size_t forward_end = g_.nodes().size();
    PRECIS_ASSIGN_OR_RETURN(passes::GradientResult grads, passes::BuildGradients(model_, target, result_.weights));
    result_.backward_nodes = grads.backward_nodes;
    size_t before = g_.nodes().size();
    for (size_t i = forward_end; i < before; ++i) backward_.insert(g_.nodes()[i].get());
    if (scaling_ != Scaling::kNone) Unscale(grads);
    if (o_.clip_grad_norm > 0) ClipGradients(grads);
    size_t optimizer_begin = g_.nodes().size();
    for (size_t i = before; i < optimizer_begin; ++i) pinned_[g_.nodes()[i].get()] = "loss scaling and clipping of the FP32 weight gradients";
    AddOptimizer(grads);
    if (scaling_ == Scaling::kDynamic) AddScalerUpdate();
    if (o_.gradient_outputs) PRECIS_RETURN_IF_ERROR(AddGradientOutputs(grads));
    std::string lr = NamePublic(g_.FindLocal(lr_), "lr")->name();
    if (scaling_ != Scaling::kNone) {
      extra_outputs_.push_back(NamePublic(scale_, "loss_scale")->name());
      extra_outputs_.push_back(NamePublic(found_inf_, "skipped")->name());
    }
    if (grad_norm_) extra_outputs_.push_back(NamePublic(grad_norm_, "grad_norm")->name());
    for (size_t i = optimizer_begin; i < g_.nodes().size(); ++i)
      pinned_.emplace(g_.nodes()[i].get(), "FP32 master weights: the optimizer and its state, the loss scaler");
    result_.optimizer_nodes = int(g_.nodes().size() - before);
    PRECIS_RETURN_IF_ERROR(passes::InferShapesAndFold(model_).status());
    if (low_ != ir::DType::kUndefined) PRECIS_RETURN_IF_ERROR(AssignTrainingPrecision(loss->name(), lr));
    return Emit(loss->name(), lr);
  }

 private:
  // Training plans have static shapes (state and gradients are sized when compiling): a
  // symbolic or unknown input dim is an error that says how to fix it.
  Status CheckStaticInputs() const {
    for (const ir::Value* v : g_.inputs()) {
      const ir::Type& t = v->type();
      if (t.is_tensor() && t.shape().is_static()) continue;
      std::string example;
      if (t.is_tensor() && t.shape().has_rank())
        for (const ir::Dim& d : t.shape().dims()) example += (example.empty() ? "" : "x") + (d.is_static() ? std::to_string(d.value()) : std::string("32"));
      return InvalidArgument("input '" + v->name() + "' has type " + ir::PrintType(t) +
                             ": training plans need static shapes; give them with --shape " + v->name() + "=" +
                             (example.empty() ? std::string("DIMS") : example) + " (symbolic dims in training plans are not supported yet)");
    }
    return Status::Ok();
  }

  Status CheckOptions() {
    if (o_.loss != "cross-entropy" && o_.loss != "mse" && o_.loss != "output")
      return InvalidArgument("unknown loss '" + o_.loss + "' (cross-entropy, mse or output)");
    if (o_.optimizer != "sgd" && o_.optimizer != "adamw") return InvalidArgument("unknown optimizer '" + o_.optimizer + "' (sgd or adamw)");
    if (!(o_.lr > 0)) return InvalidArgument("the learning rate must be positive");
    PRECIS_RETURN_IF_ERROR(CheckLrSchedule(o_.schedule));
    PRECIS_RETURN_IF_ERROR(CheckPrecisionOptions());
    if (o_.loss != "output" && g_.FindLocal(o_.label)) return InvalidArgument("the label name '" + o_.label + "' is already a value of the model");
    return Status::Ok();
  }

  // --precision, --loss-scale, --init-scale, --growth-interval, --clip-grad-norm.
  Status CheckPrecisionOptions() {
    if (o_.precision == "fp16") low_ = ir::DType::kF16;
    else if (o_.precision == "bf16") low_ = ir::DType::kBF16;
    else if (o_.precision != "fp32") return InvalidArgument("unknown precision '" + o_.precision + "' (fp32, fp16 or bf16)");
    std::string mode = o_.loss_scale;
    if (mode.empty()) mode = o_.precision == "fp16" ? "dynamic" : "none";
    else if (o_.precision == "fp32")
      return InvalidArgument("--loss-scale " + mode + ": loss scaling is for fp16 and bf16 training; an FP32 plan's gradients need none");
    if (mode == "dynamic") {
      scaling_ = Scaling::kDynamic;
    } else if (mode == "none") {
      scaling_ = Scaling::kNone;
    } else {
      char* end = nullptr;
      double v = std::strtod(mode.c_str(), &end);
      if (!end || *end != 0 || mode.empty()) return InvalidArgument("--loss-scale '" + mode + "': expected dynamic, none or a positive number");
      if (!(v > 0) || !(v <= double(FLT_MAX)) || float(v) < FLT_MIN)
        return InvalidArgument("--loss-scale " + mode + ": a static loss scale must be a positive, finite FP32 number");
      scaling_ = Scaling::kStatic;
      static_scale_ = v;
    }
    if (scaling_ != Scaling::kDynamic && (o_.init_scale_given || o_.growth_interval_given))
      return InvalidArgument(std::string(o_.init_scale_given ? "--init-scale" : "--growth-interval") + " applies to --loss-scale dynamic (this plan's loss scaling is " + mode + ")");
    if (!(o_.init_scale > 0) || !(o_.init_scale <= double(FLT_MAX)) || float(o_.init_scale) < FLT_MIN)
      return InvalidArgument("--init-scale " + Num(o_.init_scale) + ": the initial loss scale must be a positive, finite FP32 number");
    if (o_.growth_interval < 1) return InvalidArgument("--growth-interval " + std::to_string(o_.growth_interval) + ": the growth interval must be 1 or more steps");
    if (!(o_.growth_factor > 1) || !(o_.backoff_factor > 0 && o_.backoff_factor < 1))
      return InvalidArgument("the loss scaler needs a growth factor > 1 and a backoff factor in (0, 1)");
    if (!(o_.clip_grad_norm >= 0) || std::isinf(o_.clip_grad_norm))
      return InvalidArgument("--clip-grad-norm " + Num(o_.clip_grad_norm) + ": the maximum norm must be a positive finite number (0: no clipping)");
    if (scaling_ != Scaling::kNone && opset_ < 9)
      return Unimplemented("loss scaling needs opset 9 or newer (Where); the model has " + std::to_string(opset_));
    result_.loss_scaling = scaling_ == Scaling::kDynamic ? "dynamic" : scaling_ == Scaling::kStatic ? "static" : "none";
    return Status::Ok();
  }

  static std::string Num(double v) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%g", v);
    return buf;
  }

  // loss x scale, the value the backward pass starts from. The scale is state (amp.loss_scale)
  // for dynamic and static scaling alike, so that train_step can report it.
  ir::Value* ScaleLoss(ir::Value* loss) {
    float init = float(scaling_ == Scaling::kDynamic ? o_.init_scale : static_scale_);
    scale_ = StateInput(g_, "amp.loss_scale", {}, init);
    state_.push_back("amp.loss_scale");
    ops::IrBuilder b(g_, opset_, "loss_scale", "the loss scaling");
    return b.Op("Mul", {loss, scale_});
  }

  // Every weight gradient x 1/scale and the non-finite check, in one UnscaleGradients; the
  // optimizer's state updates run only when found_inf is false. 1/scale in f64, rounded to f32
  // (GradScaler: scale.double().reciprocal().float()).
  void Unscale(passes::GradientResult& grads) {
    ops::IrBuilder b(g_, opset_, "unscale", "gradient unscaling");
    const ir::DType f = ir::DType::kF32, d64 = ir::DType::kF64;
    auto to = [&](ir::Value* v, ir::DType t) { return b.Op("Cast", {v}, {ops::GradAttr::Int("to", int64_t(ir::DTypeToOnnx(t)))}); };
    ir::Value* inv = to(b.Op("Div", {b.Scalar(1.0, d64), to(scale_, d64)}), f);
    std::vector<ir::Value*> inputs = {inv};
    for (const std::string& w : result_.weights) inputs.push_back(grads.grads.at(w));
    std::vector<ir::Value*> outs = b.OpN("UnscaleGradients", inputs, {}, inputs.size());
    for (size_t i = 0; i < result_.weights.size(); ++i) grads.grads[result_.weights[i]] = outs[i];
    found_inf_ = outs.back();
    apply_ = b.Op("Not", {found_inf_})->name();
  }

  // torch.nn.utils.clip_grad_norm_ on the unscaled gradients: total = the L2 norm of the
  // per-tensor L2 norms; every gradient x min(max_norm / (total + 1e-6), 1).
  void ClipGradients(passes::GradientResult& grads) {
    ops::IrBuilder b(g_, opset_, "clip", "gradient clipping");
    const ir::DType f = ir::DType::kF32;
    std::vector<ir::Value*> squares;
    for (const std::string& w : result_.weights) {
      ir::Value* norm = b.Op("Sqrt", {b.Op("ReduceSumSquare", {grads.grads.at(w)}, {ops::GradAttr::Int("keepdims", 0)})});
      squares.push_back(b.Op("Mul", {norm, norm}));
    }
    grad_norm_ = b.Op("Sqrt", {squares.size() == 1 ? squares[0] : b.Op("Sum", squares)});
    ir::Value* coef = b.Op("Min", {b.Op("Div", {b.Scalar(o_.clip_grad_norm, f), b.Op("Add", {grad_norm_, b.Scalar(1e-6, f)})}), b.Scalar(1.0, f)});
    for (const std::string& w : result_.weights) grads.grads[w] = b.Op("Mul", {grads.grads.at(w), coef});
  }

  // GradScaler.update: on a non-finite gradient scale x backoff and the tracker reset; otherwise
  // tracker + 1, and at growth_interval scale x growth (kept only when finite) and the tracker
  // reset. The backoff never takes the scale below FP32's smallest normal (GradScaler's would
  // reach 0 after about 140 skipped steps in a row from 65536).
  void AddScalerUpdate() {
    ops::IrBuilder b(g_, opset_, "loss_scaler", "the loss scaler");
    const ir::DType f = ir::DType::kF32;
    ir::Value* tracker = StateInputI64(g_, "amp.growth_tracker", 0);
    state_.push_back("amp.growth_tracker");
    ir::Value* zero = I64Constant(g_, "amp.zero", 0);
    ir::Value* inc = b.Op("Add", {tracker, I64Constant(g_, "amp.one", 1)});
    ir::Value* grow = b.Op("Equal", {inc, I64Constant(g_, "amp.growth_interval", o_.growth_interval)});
    ir::Value* grown = b.Op("Mul", {scale_, b.Scalar(o_.growth_factor, f)});
    ir::Value* finite = b.Op("Less", {grown, b.Scalar(double(INFINITY), f)});
    ir::Value* kept = b.Op("Where", {grow, b.Op("Where", {finite, grown, scale_}), scale_});
    ir::Value* backed = b.Op("Max", {b.Op("Mul", {scale_, b.Scalar(o_.backoff_factor, f)}), b.Scalar(double(FLT_MIN), f)});
    Update(b.Op("Where", {found_inf_, backed, kept}), "amp.loss_scale");
    Update(b.Op("Where", {found_inf_, zero, b.Op("Where", {grow, zero, inc})}), "amp.growth_tracker");
  }

  // Mixed precision over the differentiated graphs (see train.h). The values the programs
  // output or write to state become graph outputs while the passes run, so that they keep their
  // FP32 type and name (the state's dtype) and no cast is folded into them.
  Status AssignTrainingPrecision(const std::string& loss, const std::string& lr) {
    {
      emit::EmitOptions measure = EmitOptionsFor("fp32");
      measure.measure_only = true;
      std::vector<emit::ProgramSource> programs = Programs(loss, lr);
      PRECIS_ASSIGN_OR_RETURN(emit::EmittedPlan fp32, emit::EmitPrograms(model_, programs, measure));
      result_.fp32_arena_bytes = fp32.arena_bytes;
    }
    size_t fp32_weight_bytes = 0;
    for (const std::string& w : result_.weights) fp32_weight_bytes += ValueBytes(*g_.FindLocal(w));
    for (ir::Graph* graph : {&g_, eval_.graph.get()}) {
      std::vector<ir::Value*> outputs = graph->outputs(), kept = outputs;
      std::vector<std::string> names = graph == &g_ ? Programs(loss, lr)[0].outputs : Programs(loss, lr)[1].outputs;
      if (graph == &g_) {
        for (const auto& [from, state] : updates_) names.push_back(from);
        if (!apply_.empty()) names.push_back(apply_);
      }
      for (const std::string& n : names)
        if (ir::Value* v = graph->FindLocal(n); v && v->kind() == ir::Value::Kind::kNodeOutput) kept.push_back(v);
      graph->SetOutputs(kept);
      passes::PrecisionOptions p;
      p.low = low_;
      // The loss runs in FP32 (so a model output it reads is written in FP32 directly).
      for (const auto& up : graph->nodes())
        if (loss_nodes_.count(up.get())) p.pinned_fp32[up.get()] = {ir::Reason::kKeepFp32Policy, "the training loss runs in FP32"};
      if (graph == &g_)
        for (const auto& up : g_.nodes()) {
          if (auto it = pinned_.find(up.get()); it != pinned_.end()) p.pinned_fp32[up.get()] = {ir::Reason::kOptimizerFp32, it->second};
          // Gradient sums (bias gradients, broadcast un-expansion) read 16-bit gradients with FP32
          // accumulation rather than forcing the gradients they read to FP32.
          if (backward_.count(up.get()) && up->op_type() == "ReduceSum") p.read_low.insert(up.get());
        }
      // Biases (and other parameters of rank <= 1) are read cast to 16 bits by the elementwise
      // node next to a 16-bit product, as PyTorch autocast casts a Linear's bias: otherwise the
      // Add runs in FP32 and every activation after it stays FP32 up to the next product.
      for (const std::string& w : result_.weights)
        if (const ir::Value* v = graph->FindLocal(w); v && v->type().shape().has_rank() && v->type().shape().rank() <= 1) p.cast_down.insert(v);
      passes::RecognizePatterns(*graph);
      PRECIS_ASSIGN_OR_RETURN(passes::PrecisionStats stats, passes::AssignPrecision(*graph, p));
      passes::FoldCasts(*graph);
      passes::FuseCasts(*graph);
      graph->SetOutputs(outputs);
      if (graph == &g_) casts_inserted_ = stats.casts_inserted;
    }
    StoreWorkingCopies();
    return BuildTrainingReport(fp32_weight_bytes);
  }

  // 16-bit working copies kept as state. The precision pass casts each master weight to 16 bits
  // where the step starts; that cast becomes a state tensor the forward and backward passes read,
  // and the optimizer writes the cast of the updated master into it, in the fused pass that
  // updates the master (the plan emitter writes both in place). So each weight is read and written
  // once per step, where a cast at the next step's start read it again. A derive program
  // (plan.fbs Program.derives_state) recomputes the copies from the masters when state is written
  // or loaded: checkpoints hold masters only, and the plan stores the copies as zeros.
  void StoreWorkingCopies() {
    std::map<std::string, std::string> next_of;  // master -> its new value
    for (const auto& [next, state] : updates_) next_of[state] = next;
    ops::IrBuilder b(g_, opset_, "optimizer", "the optimizer");
    const char* suffix = low_ == ir::DType::kBF16 ? ".working.bf16" : ".working.fp16";
    for (const std::string& w : result_.weights) {
      ir::Value* p = g_.FindLocal(w);
      auto next = next_of.find(w);
      if (!p || next == next_of.end()) continue;
      std::vector<ir::Node*> casts;
      for (const ir::Use& u : p->uses()) {
        ir::Node* n = u.node;
        if (n->owner() == &g_ && n->domain().empty() && n->op_type() == "Cast" && n->outputs().size() == 1 && n->outputs()[0] &&
            n->outputs()[0]->type().dtype() == low_ && std::find(casts.begin(), casts.end(), n) == casts.end())
          casts.push_back(n);
      }
      if (casts.empty()) continue;
      std::string name = w + suffix;
      for (int i = 1; g_.FindLocal(name) || eval_.graph->FindLocal(name); ++i) name = w + suffix + "." + std::to_string(i);
      std::vector<int64_t> dims = StaticDims(*p);
      size_t bytes = ValueBytes(*p) / 4 * size_t(ir::DTypeSize(low_));
      ir::Value* copy = g_.AddInputWithDefault(name, casts[0]->outputs()[0]->type(), ir::Tensor(low_, dims, ir::Buffer::Own(std::vector<uint8_t>(bytes, 0))));
      for (ir::Node* c : casts) {
        g_.ReplaceAllUses(c->outputs()[0], copy);
        g_.RemoveNode(c);
      }
      ir::Value* rewritten = b.Op("Cast", {g_.FindLocal(next->second)}, {ops::GradAttr::Int("to", int64_t(ir::DTypeToOnnx(low_)))});
      std::string evidence = "the 16-bit working copy of '" + w + "', written with the master by the optimizer step";
      rewritten->producer()->mutable_precision() = {ir::DType::kUndefined, std::string(ir::ReasonName(ir::Reason::kCast)), evidence};
      pinned_[rewritten->producer()] = evidence;
      Update(rewritten, name);
      optimizer_states_.push_back(name);
      working_.emplace_back(w, name);
    }
    if (working_.empty()) return;
    // The derive program's graph: each master cast to its working copy.
    derive_.opsets = model_.opsets;
    derive_.ir_version = model_.ir_version;
    derive_.graph = std::make_unique<ir::Graph>("derive_working_copies");
    ops::IrBuilder d(*derive_.graph, opset_, "working_copy", "the working copies");
    for (const auto& [w, copy] : working_) {
      const ir::Value* master = g_.FindLocal(w);
      ir::Value* in = derive_.graph->AddInputWithDefault(w, master->type(), *master->data());
      ir::Value* cast = d.Op("Cast", {in}, {ops::GradAttr::Int("to", int64_t(ir::DTypeToOnnx(low_)))});
      derive_.graph->AddOutput(cast);
      derive_updates_[cast->name()] = copy;
    }
  }

  static size_t ValueBytes(const ir::Value& v) {
    if (!v.type().is_tensor() || !v.type().shape().is_static()) return 0;
    int64_t n = 1;
    for (const ir::Dim& d : v.type().shape().dims()) n *= d.value();
    return size_t(n) * size_t(ir::DTypeSize(v.type().dtype()));
  }

  // forward, backward or optimizer; a cast the precision pass inserted belongs to the earliest
  // phase among its consumers.
  std::string PhaseOf(const ir::Node* n) const {
    if (backward_.count(n)) return "backward";
    if (pinned_.count(n)) return "optimizer";
    if (n->op_type() != "Cast" || n->outputs().empty() || !n->outputs()[0]) return "forward";
    bool backward = false, optimizer = false;
    for (const ir::Use& u : n->outputs()[0]->uses()) {
      std::string p = PhaseOf(u.node);
      if (p == "forward") return p;
      backward |= p == "backward";
      optimizer |= p == "optimizer";
    }
    return backward ? "backward" : optimizer ? "optimizer" : "forward";
  }

  Status BuildTrainingReport(size_t fp32_weight_bytes) {
    emit::ReportInputs r;
    r.precision = o_.precision;
    r.model = "training graph (train_step)";
    r.casts_inserted = casts_inserted_;
    emit::TrainingReportInputs& t = r.training;
    t.present = true;
    t.loss_scaling = result_.loss_scaling;
    if (scaling_ == Scaling::kDynamic)
      t.loss_scaling += " (init " + Num(o_.init_scale) + ", growth x" + Num(o_.growth_factor) + " every " + std::to_string(o_.growth_interval) + " clean steps, backoff x" + Num(o_.backoff_factor) + ")";
    if (scaling_ == Scaling::kStatic) t.loss_scaling += " " + Num(static_scale_);
    t.master_weight_bytes = fp32_weight_bytes;
    std::set<const ir::Value*> weights;
    for (const std::string& w : result_.weights) weights.insert(g_.FindLocal(w));
    for (const auto& up : g_.nodes()) {
      const ir::Node* n = up.get();
      bool backward = backward_.count(n) > 0;
      t.phases[n] = PhaseOf(n);
      if (n->op_type() == "Cast" && n->inputs().size() == 1 && n->outputs().size() == 1 && n->outputs()[0] &&
          ir::IsFloat(n->outputs()[0]->type().dtype()) && ir::DTypeSize(n->outputs()[0]->type().dtype()) == 2) {
        // A 16-bit working copy: the cast of a weight, or of a weight moved by data-movement
        // ops (an exporter's Transpose of a Linear weight).
        const ir::Value* v = n->inputs()[0];
        while (v && v->kind() == ir::Value::Kind::kNodeOutput && !v->producer()->inputs().empty() &&
               ops::OpRegistry::Get().Find("", v->producer()->op_type()) &&
               ops::OpRegistry::Get().Find("", v->producer()->op_type())->precision == ops::PrecisionClass::kPassthrough)
          v = v->producer()->inputs()[0];
        if (weights.count(v)) t.working_weight_bytes += ValueBytes(*n->outputs()[0]);
      }
      if (!backward) continue;
      for (const ir::Value* v : n->outputs()) {
        if (!v || !v->type().is_tensor() || !ir::IsFloat(v->type().dtype())) continue;
        size_t bytes = ValueBytes(*v);
        t.gradient_bytes += bytes;
        t.fp32_gradient_bytes += bytes / size_t(ir::DTypeSize(v->type().dtype())) * 4;
      }
    }
    for (const auto& [master, copy] : working_) {
      t.working_weight_bytes += ValueBytes(*g_.FindLocal(copy));
      ++t.stored_working_copies;
    }
    r.fp32_activation_bytes = result_.fp32_arena_bytes;
    emit::EmitOptions measure = EmitOptionsFor(o_.precision);
    measure.measure_only = true;
    std::vector<emit::ProgramSource> programs = Programs(loss_name_, lr_name_);
    PRECIS_ASSIGN_OR_RETURN(emit::EmittedPlan planned, emit::EmitPrograms(model_, programs, measure));
    r.activation_bytes = planned.arena_bytes;
    r.weight_bytes = r.fp32_weight_bytes = emit::ConstantBytes(g_);
    emit::Report report = emit::BuildPrecisionReport(g_, r);
    result_.report_json = report.json;
    result_.report_text = report.text;
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
    optimizer_states_.push_back("optimizer.step");
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
          optimizer_states_.push_back(buf->name());
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
        optimizer_states_.push_back(m->name());
        optimizer_states_.push_back(v->name());
        ir::Value* base = decay ? b.Op("Mul", {p, decay}) : p;
        ir::Value* denom = b.Op("Add", {b.Op("Div", {b.Op("Sqrt", {v_next}), bc2_sqrt}), b.Scalar(o_.eps, f)});
        next = b.Op("Sub", {base, b.Op("Mul", {step_size, b.Op("Div", {m_next, denom})})});
      }
      Update(next, name);
      optimizer_states_.push_back(name);
    }
  }

  void Update(ir::Value* next, const std::string& state) {
    updates_[next->name()] = state;
    state_.push_back(state);
  }

  std::vector<emit::ProgramSource> Programs(const std::string& loss, const std::string& lr) {
    loss_name_ = loss;
    lr_name_ = lr;
    std::vector<emit::ProgramSource> programs(2);
    programs[0].name = "train_step";
    programs[0].graph = &g_;
    programs[0].outputs = {loss, lr};
    for (const std::string& g : gradient_outputs_) programs[0].outputs.push_back(g);
    for (const std::string& g : extra_outputs_) programs[0].outputs.push_back(g);
    programs[0].state_updates = updates_;
    if (!apply_.empty())
      for (const std::string& s : optimizer_states_) programs[0].update_predicates[s] = apply_;
    programs[1].name = "eval_step";
    programs[1].graph = eval_.graph.get();
    programs[1].outputs = {loss};
    for (const std::string& out : model_outputs_)
      if (out != loss) programs[1].outputs.push_back(out);
    if (derive_.graph) {
      emit::ProgramSource& d = programs.emplace_back();
      d.name = "derive_working_copies";
      d.graph = derive_.graph.get();
      d.state_updates = derive_updates_;
      d.derives_state = true;
    }
    return programs;
  }

  emit::EmitOptions EmitOptionsFor(const std::string& precision) {
    emit::EmitOptions options;
    options.precision = precision;
    options.target = o_.target;
    for (const std::string& w : result_.weights) options.state.insert(w);
    for (const std::string& s : state_) options.state.insert(s);
    return options;
  }

  StatusOr<TrainPlan> Emit(const std::string& loss, const std::string& lr) {
    std::vector<emit::ProgramSource> programs = Programs(loss, lr);
    emit::EmitOptions options = EmitOptionsFor(o_.precision);
    if (o_.source_model) {
      PRECIS_ASSIGN_OR_RETURN(options.source_model, o_.source_model(options.state));
    }
    options.training_config = TrainingConfigJson(o_);
    options.report_json = result_.report_json;
    options.report_text = result_.report_text;
    if (o_.codegen && o_.target == "cpu") {
      std::set<std::string> keep, sources;
      for (const emit::ProgramSource& p : programs) {
        keep.insert(p.outputs.begin(), p.outputs.end());
        for (const auto& [from, state] : p.state_updates) keep.insert(from), sources.insert(from);
        for (const auto& [node, value] : p.predicates) keep.insert(value);
        for (const auto& [state, value] : p.update_predicates) keep.insert(value);
      }
      GeneratedCode code;
      PRECIS_RETURN_IF_ERROR(FuseAndGenerate(model_, {&g_, eval_.graph.get()}, keep, options, code, "cpu", o_.fuse_rows, sources));
      Status eval_ok = ir::Verify(eval_);
      if (!eval_ok.ok()) return eval_ok.WithContext("internal error: the evaluation graph fails verification after elementwise fusion");
      result_.fused_kernels = int(code.fused.size());
      for (const auto& g : code.fused) result_.fused_nodes += int(g.replaced.size());
      result_.report_json = options.report_json;
      result_.report_text = options.report_text;
    }
    // Loss-scaled CPU plans: the optimizer runs under the updates' predicate, so its steps write
    // the state in place (the CUDA backend runs predicated copies only: its plans keep them).
    if (o_.target == "cpu" && !apply_.empty()) emit::PredicateUpdateSources(programs[0], apply_);
    PRECIS_ASSIGN_OR_RETURN(result_.plan, emit::EmitPrograms(model_, programs, options));
    return std::move(result_);
  }

  static constexpr const char* kDropoutSeed = "dropout.seed";
  static constexpr const char* kDropoutCounter = "dropout.counter";

  ir::Model& model_;
  ir::Model eval_;  // the evaluation graph (inference form), eval_step's
  // 16-bit working copies kept as state (master -> copy), and the graph deriving them.
  std::vector<std::pair<std::string, std::string>> working_;
  ir::Model derive_;
  std::map<std::string, std::string> derive_updates_;
  ir::Graph& g_;
  const TrainOptions& o_;
  int64_t opset_;
  TrainPlan result_;
  std::string lr_;  // the f32 lr of the current step
  std::vector<std::string> model_outputs_, state_;
  std::map<std::string, std::string> updates_;  // new value -> the state it overwrites
  std::vector<std::string> gradient_outputs_;
  // Mixed precision and loss scaling.
  enum class Scaling { kNone, kDynamic, kStatic };
  ir::DType low_ = ir::DType::kUndefined;  // kF16 or kBF16 for mixed-precision plans
  Scaling scaling_ = Scaling::kNone;
  double static_scale_ = 0;
  ir::Value* scale_ = nullptr;      // amp.loss_scale (state)
  ir::Value* found_inf_ = nullptr;  // UnscaleGradients' flag
  ir::Value* grad_norm_ = nullptr;  // with --clip-grad-norm
  std::string apply_;               // the predicate of the optimizer's state updates (not found_inf)
  std::vector<std::string> optimizer_states_, extra_outputs_;
  std::unordered_set<const ir::Node*> backward_, loss_nodes_;
  std::map<const ir::Node*, std::string> pinned_;  // node -> evidence of optimizer-fp32
  std::string loss_name_, lr_name_;
  int casts_inserted_ = 0;
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
  if (o.precision != "fp32") {
    std::string mode = o.loss_scale.empty() ? (o.precision == "fp16" ? "dynamic" : "none") : o.loss_scale;
    j += ", \"precision\": " + ir::JsonEscape(o.precision) + ", \"loss_scale\": " + ir::JsonEscape(mode);
    if (mode == "dynamic") j += ", \"init_scale\": " + Number(o.init_scale) + ", \"growth_interval\": " + std::to_string(o.growth_interval);
  }
  if (o.clip_grad_norm > 0) j += ", \"clip_grad_norm\": " + Number(o.clip_grad_norm);
  return j + "}";
}

StatusOr<TrainPlan> CompileTraining(ir::Model& model, const TrainOptions& options) { return TrainingAssembler(model, options).Run(); }

}  // namespace precis::driver
