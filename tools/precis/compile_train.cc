// `precis compile MODEL.onnx --train ...`: a training plan (programs train_step and eval_step) from
// an ONNX forward model (compiler/driver/train.h), with a summary of what it trains.
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include "compiler/driver/train.h"
#include "compiler/onnx/importer.h"
#include "tools/precis/commands.h"
#include "tools/precis/options.h"

namespace precis::tools {
namespace {

constexpr const char* kTrainUsage =
    "usage: precis compile MODEL.onnx --train --loss cross-entropy|mse|output --label NAME [--loss-output NAME]\n"
    "       [--ignore-index N] [--optimizer sgd|adamw] [--lr X] [--momentum X] [--nesterov] [--weight-decay X]\n"
    "       [--betas A,B] [--eps X] [--lr-schedule constant] [--freeze REGEX] [--shape NAME=DIMS ...]\n"
    "       [--precision fp32] [--quiet] -o TRAIN.plan\n";

bool ParseNumber(const std::string& text, double* out) {
  char* end = nullptr;
  *out = std::strtod(text.c_str(), &end);
  return !text.empty() && end && *end == 0;
}

}  // namespace

int CompileTrainCommand(const std::vector<std::string>& args) {
  std::string model_path, out;
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
      if (*v != "fp32")
        return ReportError("compile", Unimplemented("--train --precision " + *v + ": mixed-precision training is not implemented yet (fp32 only)"));
    } else if (a == "--lr-schedule" && (v = value())) {
      if (*v != "constant")
        return ReportError("compile", Unimplemented("--lr-schedule " + *v + " is not implemented yet (constant only)"));
    } else if (a == "--warmup-steps" && (v = value())) {
      return ReportError("compile", Unimplemented("--warmup-steps is not implemented yet"));
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
  auto model = onnx::ImportModelFile(model_path);
  if (!model.ok()) return ReportError("compile", model.status().WithContext(model_path));
  auto plan = driver::CompileTraining(**model, o);
  if (!plan.ok()) return ReportError("compile", plan.status().WithContext(model_path));
  std::ofstream f(out, std::ios::binary);
  f.write(reinterpret_cast<const char*>(plan->plan.bytes.data()), std::streamsize(plan->plan.bytes.size()));
  f.close();
  if (!f) return ReportError("compile", Internal("cannot write '" + out + "'"));
  if (!quiet) {
    std::printf("%s: training plan, %s loss, %s (lr %g)\n", out.c_str(), o.loss.c_str(), o.optimizer.c_str(), o.lr);
    std::printf("  trains %zu weights", plan->weights.size());
    if (!plan->frozen.empty()) std::printf(", %zu frozen", plan->frozen.size());
    if (!plan->running_statistics.empty()) std::printf(", %zu BatchNorm running statistics", plan->running_statistics.size());
    std::printf("; nodes: %d forward, %d backward, %d optimizer\n", plan->forward_nodes, plan->backward_nodes, plan->optimizer_nodes);
    std::printf("  programs train_step, eval_step; %zu steps, arena %s, file %s\n", plan->plan.steps, FormatBytes(plan->plan.arena_bytes).c_str(),
                FormatBytes(plan->plan.bytes.size()).c_str());
  }
  return 0;
}

}  // namespace precis::tools
