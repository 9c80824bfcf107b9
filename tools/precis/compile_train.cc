// `precis compile MODEL.onnx --train ...`: a training plan (programs train_step and eval_step) from
// an ONNX forward model (compiler/driver/train.h), with a summary of what it trains.
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <set>
#include <sstream>

#include <onnx/onnx_pb.h>

#include "compiler/driver/train.h"
#include "compiler/onnx/external_data.h"
#include "compiler/onnx/importer.h"
#include "tools/precis/commands.h"
#include "tools/precis/options.h"

namespace precis::tools {
namespace {

constexpr const char* kTrainUsage =
    "usage: precis compile MODEL.onnx --train --loss cross-entropy|mse|output --label NAME [--loss-output NAME]\n"
    "       [--ignore-index N] [--optimizer sgd|adamw] [--lr X] [--momentum X] [--nesterov] [--weight-decay X]\n"
    "       [--betas A,B] [--eps X] [--lr-schedule constant|cosine|step] [--warmup-steps N] [--freeze REGEX]\n"
    "       [--shape NAME=DIMS ...] [--precision fp32|fp16|bf16] [--loss-scale dynamic|none|VALUE] [--init-scale X]\n"
    "       [--growth-interval N] [--clip-grad-norm X] [--report REPORT.json] [--device cpu|cuda] [--no-codegen] [--no-row-fusion] [--quiet]\n"
    "       -o TRAIN.plan\n"
    "--device cuda: a plan for the CUDA backend (every step has a CUDA kernel; not yet run on a GPU).\n"
    "mixed precision (--precision fp16|bf16): 16-bit forward and backward products with FP32 accumulation, FP32 master\n"
    "  weights, optimizer and loss; weight gradients in FP32. Loss scaling as PyTorch's GradScaler: --loss-scale dynamic\n"
    "  (the fp16 default; --init-scale 65536, x2 after --growth-interval 2000 clean steps, x0.5 and the step skipped on\n"
    "  Inf/NaN gradients), a fixed VALUE (steps with Inf/NaN gradients skipped), or none (the bf16 default).\n"
    "  --clip-grad-norm X clips the unscaled gradients' total L2 norm to X (torch.nn.utils.clip_grad_norm_).\n"
    "schedule options (torch.optim.lr_scheduler, stepped once per optimizer step):\n"
    "  --lr-schedule cosine     CosineAnnealingLR over the total steps: --lr-total-steps N (0, the default: precis train\n"
    "                           sets it from --epochs/--steps on its first run), --lr-min X (eta_min, default 0)\n"
    "  --lr-schedule step       StepLR: --lr-step-size N (required), --lr-gamma X (default 0.1)\n"
    "  --warmup-steps N         LinearLR from --warmup-start-factor F (default 1/3) to 1 over N steps, then the schedule\n"
    "                           (SequentialLR with milestone N; a cosine then spans the total minus N steps)\n";

bool ParseNumber(const std::string& text, double* out) {
  char* end = nullptr;
  *out = std::strtod(text.c_str(), &end);
  return !text.empty() && end && *end == 0;
}

// The model file for the plan's source_model, self-contained: the data of the initializers that
// become state left out (precis export writes them back from the state, so the trained weights
// are not stored twice) and the external data of the others inlined (an exported model must not
// point at files next to the source model). Unparsable files are kept whole.
StatusOr<std::vector<uint8_t>> SourceModelWithoutState(const std::string& model_path, const std::set<std::string>& state) {
  std::ifstream f(model_path, std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  ::onnx::ModelProto model;
  if (model.ParseFromString(bytes)) {
    for (::onnx::TensorProto& t : *model.mutable_graph()->mutable_initializer()) {
      if (state.count(t.name())) {
        t.clear_raw_data();
        t.clear_float_data();
        t.clear_double_data();
        t.clear_int32_data();
        t.clear_int64_data();
        t.clear_external_data();
        t.clear_data_location();
      } else if (t.data_location() == ::onnx::TensorProto::EXTERNAL) {
        PRECIS_ASSIGN_OR_RETURN(std::string data, onnx::ReadExternalData(t, model_path));
        t.set_raw_data(std::move(data));
        t.clear_external_data();
        t.clear_data_location();
      }
    }
    model.SerializeToString(&bytes);
  }
  return std::vector<uint8_t>(bytes.begin(), bytes.end());
}

}  // namespace

int CompileTrainCommand(const std::vector<std::string>& args) {
  std::string model_path, out, report_path;
  bool quiet = false;
  driver::TrainOptions o;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    auto value = [&]() -> const std::string* { return i + 1 < args.size() ? &args[++i] : nullptr; };
    auto number = [&](double* target) -> bool {
      const std::string* v = value();
      return v && ParseNumber(*v, target);
    };
    const std::string* v = nullptr;
    if (a == "--train") continue;
    if (a == "--quiet") quiet = true;
    else if (a == "--nesterov") o.nesterov = true;
    else if (a == "--no-codegen") o.codegen = false;
    else if (a == "--no-row-fusion") o.fuse_rows = false;
    else if ((a == "-o" || a == "--output") && (v = value())) out = *v;
    else if (a == "--loss" && (v = value())) o.loss = *v;
    else if (a == "--label" && (v = value())) o.label = *v;
    else if (a == "--loss-output" && (v = value())) o.loss_output = *v;
    else if (a == "--optimizer" && (v = value())) o.optimizer = *v;
    else if (a == "--freeze" && (v = value())) o.freeze = *v;
    else if (a == "--lr") { if (!number(&o.lr)) return UsageError("compile", "--lr needs a number", kTrainUsage); }
    else if (a == "--momentum") { if (!number(&o.momentum)) return UsageError("compile", "--momentum needs a number", kTrainUsage); }
    else if (a == "--weight-decay") { if (!number(&o.weight_decay)) return UsageError("compile", "--weight-decay needs a number", kTrainUsage); }
    else if (a == "--eps") { if (!number(&o.eps)) return UsageError("compile", "--eps needs a number", kTrainUsage); }
    else if (a == "--ignore-index") {
      double n = 0;
      if (!number(&n) || n != double(int64_t(n))) return UsageError("compile", "--ignore-index needs an integer", kTrainUsage);
      o.has_ignore_index = true;
      o.ignore_index = int64_t(n);
    } else if (a == "--betas" && (v = value())) {
      size_t comma = v->find(',');
      if (comma == std::string::npos || !ParseNumber(v->substr(0, comma), &o.beta1) || !ParseNumber(v->substr(comma + 1), &o.beta2))
        return UsageError("compile", "--betas needs two numbers, A,B", kTrainUsage);
    } else if (a == "--shape" && (v = value())) {
      Status s = ParseShapeOption(*v, o.shapes);
      if (!s.ok()) return UsageError("compile", s.message(), kTrainUsage);
    } else if (a == "--precision" && (v = value())) {
      o.precision = *v;
    } else if (a == "--device" && (v = value())) {
      if (*v != "cpu" && *v != "cuda") return UsageError("compile", "--device needs cpu or cuda", kTrainUsage);
      o.target = *v;
    } else if (a == "--loss-scale" && (v = value())) {
      o.loss_scale = *v;
    } else if (a == "--init-scale") {
      if (!number(&o.init_scale)) return UsageError("compile", "--init-scale needs a number", kTrainUsage);
      o.init_scale_given = true;
    } else if (a == "--growth-interval") {
      double n = 0;
      if (!number(&n) || n != double(int64_t(n))) return UsageError("compile", "--growth-interval needs a whole number", kTrainUsage);
      o.growth_interval = int64_t(n);
      o.growth_interval_given = true;
    } else if (a == "--clip-grad-norm") {
      if (!number(&o.clip_grad_norm)) return UsageError("compile", "--clip-grad-norm needs a number", kTrainUsage);
      if (!(o.clip_grad_norm > 0)) return UsageError("compile", "--clip-grad-norm needs a positive number", kTrainUsage);
    } else if (a == "--report" && (v = value())) {
      report_path = *v;
    } else if (a == "--lr-schedule" && (v = value())) {
      o.schedule.kind = *v;
    } else if (a == "--warmup-steps" || a == "--lr-total-steps" || a == "--lr-step-size") {
      double n = 0;
      if (!number(&n) || n != double(int64_t(n)) || n < 0) return UsageError("compile", a + " needs a whole number, 0 or more", kTrainUsage);
      (a == "--warmup-steps" ? o.schedule.warmup_steps : a == "--lr-total-steps" ? o.schedule.total_steps : o.schedule.step_size) = int64_t(n);
    } else if (a == "--lr-min") {
      if (!number(&o.schedule.eta_min)) return UsageError("compile", "--lr-min needs a number", kTrainUsage);
    } else if (a == "--lr-gamma") {
      if (!number(&o.schedule.gamma)) return UsageError("compile", "--lr-gamma needs a number", kTrainUsage);
    } else if (a == "--warmup-start-factor") {
      if (!number(&o.schedule.warmup_start_factor)) return UsageError("compile", "--warmup-start-factor needs a number", kTrainUsage);
    } else if (a == "--help" || a == "-h") {
      std::fputs(kTrainUsage, stdout);
      return 0;
    } else if (!a.empty() && a[0] == '-') {
      return UsageError("compile", "unknown option or missing value '" + a + "'", kTrainUsage);
    } else if (model_path.empty()) {
      model_path = a;
    } else {
      return UsageError("compile", "more than one model given", kTrainUsage);
    }
  }
  if (model_path.empty() || out.empty()) return UsageError("compile", "a model and -o TRAIN.plan are required", kTrainUsage);
  if (!report_path.empty() && o.precision == "fp32")
    return UsageError("compile", "--report: the precision report is for mixed-precision plans (--precision fp16 or bf16)", kTrainUsage);
  auto model = onnx::ImportModelFile(model_path);
  if (!model.ok()) return ReportError("compile", model.status().WithContext(model_path));
  o.source_model = [&](const std::set<std::string>& state) { return SourceModelWithoutState(model_path, state); };
  auto plan = driver::CompileTraining(**model, o);
  if (!plan.ok()) return ReportError("compile", plan.status().WithContext(model_path));
  std::ofstream f(out, std::ios::binary);
  f.write(reinterpret_cast<const char*>(plan->plan.bytes.data()), std::streamsize(plan->plan.bytes.size()));
  f.close();
  if (!f) return ReportError("compile", Internal("cannot write '" + out + "'"));
  if (!report_path.empty()) {
    std::ofstream r(report_path);
    r << plan->report_json;
    r.close();
    if (!r) return ReportError("compile", Internal("cannot write '" + report_path + "'"));
  }
  if (!quiet) {
    std::printf("%s: training plan, %s loss, %s (lr %g, %s schedule", out.c_str(), o.loss.c_str(), o.optimizer.c_str(), o.lr, o.schedule.kind.c_str());
    if (o.schedule.warmup_steps) std::printf(", %lld warmup steps", (long long)o.schedule.warmup_steps);
    std::printf(")\n");
    std::printf("  trains %zu weights", plan->weights.size());
    if (!plan->frozen.empty()) std::printf(", %zu frozen", plan->frozen.size());
    if (!plan->running_statistics.empty()) std::printf(", %zu BatchNorm running statistics", plan->running_statistics.size());
    std::printf("; nodes: %d forward, %d backward, %d optimizer", plan->forward_nodes, plan->backward_nodes, plan->optimizer_nodes);
    if (o.codegen && o.target == "cpu") std::printf("; codegen: %d fused elementwise kernels (%d nodes)", plan->fused_kernels, plan->fused_nodes);
    std::printf("\n");
    std::printf("  programs train_step, eval_step; %zu steps, arena %s, file %s\n", plan->plan.steps, FormatBytes(plan->plan.arena_bytes).c_str(),
                FormatBytes(plan->plan.bytes.size()).c_str());
    if (o.precision != "fp32")
      std::printf("  precision %s: FP32 master weights, loss scaling %s; arena %.2fx the FP32 plan's (%s)\n", o.precision.c_str(), plan->loss_scaling.c_str(),
                  plan->fp32_arena_bytes ? double(plan->plan.arena_bytes) / double(plan->fp32_arena_bytes) : 0.0, FormatBytes(plan->fp32_arena_bytes).c_str());
    if (o.clip_grad_norm > 0) std::printf("  gradients clipped to total L2 norm %g\n", o.clip_grad_norm);
    if (o.target == "cuda") std::printf("  device cuda: every step has a CUDA kernel (run with precis train --device cuda)\n");
  }
  return 0;
}

}  // namespace precis::tools
