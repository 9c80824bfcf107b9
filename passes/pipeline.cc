// Compile (see pipeline.h).
#include "passes/pipeline.h"

#include <chrono>

#include "compiler/ir/verifier.h"
#include "passes/dead_code.h"
#include "passes/fold_batchnorm.h"
#include "passes/fold_casts.h"
#include "passes/fuse_casts.h"
#include "passes/infer_shapes.h"
#include "passes/inline_if.h"
#include "passes/recognize_patterns.h"
#include "passes/specialize_inputs.h"

namespace precis::passes {

namespace {

// Records the wall time since the previous mark under `name`.
class PhaseTimer {
 public:
  explicit PhaseTimer(CompileResult& r) : r_(r), last_(std::chrono::steady_clock::now()) {}
  void Mark(const char* name) {
    auto now = std::chrono::steady_clock::now();
    r_.phase_ms.push_back({name, std::chrono::duration<double, std::milli>(now - last_).count()});
    last_ = now;
  }

 private:
  CompileResult& r_;
  std::chrono::steady_clock::time_point last_;
};

}  // namespace

Status Prepare(ir::Model& model, const CompileOptions& options, CompileResult& result) {
  PhaseTimer timer(result);
  result.nodes_before = model.graph->nodes().size();
  std::map<std::string, std::vector<int64_t>> shapes = options.shapes;
  if (options.batch > 0) {
    // --batch N: the leading dim of every tensor input not given by --shape; the rest must be static.
    for (const ir::Value* v : model.graph->inputs()) {
      const ir::Type& t = v->type();
      if (shapes.count(v->name()) || !t.is_tensor() || !t.shape().has_rank() || t.shape().dims().empty()) continue;
      std::vector<int64_t> dims{options.batch};
      for (size_t i = 1; i < t.shape().dims().size(); ++i) {
        const ir::Dim& d = t.shape().dims()[i];
        if (!d.is_static()) return InvalidArgument("--batch: input '" + v->name() + "' has a symbolic dim " + std::to_string(i) + "; give its shape with --shape");
        dims.push_back(d.value());
      }
      shapes[v->name()] = dims;
    }
  }
  PRECIS_RETURN_IF_ERROR(SpecializeInputs(model, shapes, options.input_values));
  InlineConstantIf(*model.graph);
  InferOptions infer;
  infer.fold_constants = options.fold_constants;
  PRECIS_ASSIGN_OR_RETURN(InferStats stats, InferShapesAndFold(model, infer));
  result.folded_nodes = stats.folded_nodes;
  timer.Mark("infer and fold");
  if (options.fold_batchnorm) result.folded_batchnorms = FoldBatchNorm(*model.graph);
  RemoveDeadCode(*model.graph);
  return Status::Ok();
}

StatusOr<CompileResult> Compile(ir::Model& model, const CompileOptions& options) {
  PrecisionOptions precision = options.precision_options;
  if (options.precision == "fp16") precision.low = ir::DType::kF16;
  else if (options.precision == "bf16") precision.low = ir::DType::kBF16;
  else if (options.precision != "fp32") return InvalidArgument("unknown precision '" + options.precision + "' (fp32, fp16 or bf16)");
  bool mixed = options.precision != "fp32";
  CompileResult result;
  PRECIS_RETURN_IF_ERROR(Prepare(model, options, result));
  PhaseTimer timer(result);

  emit::EmitOptions emit;
  emit.precision = options.precision;
  emit.target = options.target;
  emit.strip_weights = options.strip_weights;
  emit.source_hash = options.source_hash;
  emit::ReportInputs report;
  report.precision = options.precision;
  report.model = options.model_name;
  report.fp32_weight_bytes = emit::ConstantBytes(*model.graph);
  if (mixed) {
    emit::EmitOptions measure = emit;
    measure.measure_only = true;
    PRECIS_ASSIGN_OR_RETURN(emit::EmittedPlan fp32_plan, emit::EmitPlan(model, measure));
    report.fp32_activation_bytes = fp32_plan.arena_bytes;
    RecognizePatterns(*model.graph);
    PRECIS_ASSIGN_OR_RETURN(result.precision, AssignPrecision(*model.graph, precision));
    FoldCasts(*model.graph);
    FuseCasts(*model.graph);
    RemoveDeadCode(*model.graph);
    timer.Mark("precision passes");
  }
  if (options.target == "cuda") {
    if (options.layout != "auto" && options.layout != "nchw") return InvalidArgument("unknown layout '" + options.layout + "' (auto or nchw)");
    if (options.fuse_epilogues) result.epilogues = FuseEpilogues(*model.graph);
    if (mixed && options.layout == "auto") result.layout = ChooseLayout(*model.graph);
    timer.Mark("GPU epilogues and layout");
  }
  Status verified = ir::Verify(model);
  if (!verified.ok()) return verified.WithContext("internal error: the graph fails verification after the passes");
  result.nodes_after = model.graph->nodes().size();
  timer.Mark("verify");

  emit::EmitOptions measure = emit;
  measure.measure_only = true;
  PRECIS_ASSIGN_OR_RETURN(emit::EmittedPlan planned, emit::EmitPlan(model, measure));
  report.activation_bytes = planned.arena_bytes;
  if (!mixed) report.fp32_activation_bytes = planned.arena_bytes;
  report.weight_bytes = emit::ConstantBytes(*model.graph);
  report.casts_inserted = result.precision.casts_inserted;
  report.constants_converted = result.precision.constants_converted;
  report.calibration_source = options.calibration_source;
  report.calibration_samples = options.calibration_samples;
  report.ranges = precision.ranges;
  report.overflow_limit = precision.overflow_limit > 0 ? precision.overflow_limit : MaxFinite(precision.low) / 2;
  result.report = emit::BuildPrecisionReport(*model.graph, report);
  if (mixed) result.low_regions = emit::FindLowRegions(*model.graph);
  timer.Mark("plan memory and report");
  emit.report_json = result.report.json;
  emit.report_text = result.report.text;
  PRECIS_ASSIGN_OR_RETURN(result.plan, emit::EmitPlan(model, emit));
  timer.Mark("emit");
  return result;
}

}  // namespace precis::passes
