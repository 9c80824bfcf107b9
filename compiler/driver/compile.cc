// The compile driver (see compile.h): builds the pass lists for the options given, runs them as
// PassPipelines over one PassContext, then plans memory, builds the report and emits the plan.
#include "compiler/driver/compile.h"

#include <chrono>
#include <string_view>
#include <unordered_set>

#include "compiler/codegen/cpu_codegen.h"
#include "compiler/codegen/nvptx_codegen.h"
#include "compiler/ir/json_writer.h"
#include "compiler/ir/verifier.h"
#include "passes/pass_pipeline.h"
#include "passes/pass_registry.h"

namespace precis::driver {

namespace {

// Records the wall time since the previous mark (or restart) under `name`.
class PhaseTimer {
 public:
  explicit PhaseTimer(CompileResult& r) : r_(r), last_(std::chrono::steady_clock::now()) {}
  void Mark(const char* name) {
    auto now = std::chrono::steady_clock::now();
    r_.phase_ms.push_back({name, std::chrono::duration<double, std::milli>(now - last_).count()});
    last_ = now;
  }
  void Restart() { last_ = std::chrono::steady_clock::now(); }

 private:
  CompileResult& r_;
  std::chrono::steady_clock::time_point last_;
};

// Runs the named passes in order, bound to `context`; each pass's wall time goes to phase_ms.
Status RunPasses(ir::Model& model, const std::vector<std::string_view>& names, passes::PassContext& context,
                 const CompileOptions& options, CompileResult& result) {
  passes::PipelineOptions pipeline_options;
  pipeline_options.verify = options.verify_passes || passes::VerifyPassesByDefault();
  passes::PassPipeline pipeline(std::move(pipeline_options));
  for (std::string_view name : names) {
    PRECIS_ASSIGN_OR_RETURN(std::unique_ptr<passes::Pass> pass, passes::PassRegistry::Builtin().Create(name, context));
    pipeline.Add(std::move(pass));
  }
  Status ran = pipeline.Run(model).status();
  for (const passes::PassRecord& r : pipeline.records()) result.phase_ms.push_back({r.name, r.ms});
  return ran;
}

// --batch N: the leading dim of every tensor input not given by --shape; the rest must be static.
StatusOr<std::map<std::string, std::vector<int64_t>>> InputShapes(const ir::Model& model, const CompileOptions& options) {
  std::map<std::string, std::vector<int64_t>> shapes = options.shapes;
  if (options.batch <= 0) return shapes;
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
  return shapes;
}

// ONNX node names may be empty. Messages, the report and the error budget name nodes, and the
// budget's verdicts (measured on one compilation) must find the same nodes in the next, so every
// unnamed node gets "OpType#K" (K its position when named, made unique) before and after
// preparation, where each compilation of the same model and options has the same graph.
void NameUnnamedNodes(ir::Graph& graph) {
  std::unordered_set<std::string> taken;
  for (const auto& n : graph.nodes()) taken.insert(n->name());
  for (const auto& n : graph.nodes()) {
    if (!n->name().empty()) continue;
    std::string name = n->op_type() + "#" + std::to_string(n->index());
    for (int k = 2; taken.count(name); ++k) name = n->op_type() + "#" + std::to_string(n->index()) + "." + std::to_string(k);
    taken.insert(name);
    n->set_name(name);
  }
}

// The report's "generated_kernels" section (docs/precision-report.md): the modules and, per fused
// kernel, the nodes it replaced (the report's nodes are the graph before fusion).
void AddGeneratedKernels(const GeneratedCode& result, std::string& json, std::string& report_text) {
  ir::JsonWriter w;
  w.BeginObject();
  w.Key("modules").BeginArray();
  for (const auto& m : result.modules)
    w.BeginObject().Key("target").String(m.target).Key("bytes").Int(int64_t(m.bytes)).EndObject();  // no times: plans are deterministic
  w.EndArray();
  w.Key("kernels").BeginArray();
  for (const auto& g : result.fused) {
    w.BeginObject().Key("node").String(g.node).Key("entry").String(g.entry);
    if (g.row) w.Key("row").Int(g.row);
    w.Key("replaced").BeginArray();
    for (const std::string& n : g.replaced) w.String(n);
    w.EndArray().EndObject();
  }
  w.EndArray().EndObject();
  size_t end = json.find_last_of('}');
  if (end == std::string::npos) return;
  json.insert(end, ",\"generated_kernels\":" + w.str());
  std::string text = "\ngenerated kernels: " + std::to_string(result.fused.size()) + " fused elementwise";
  for (const auto& m : result.modules) text += "; " + m.target + " " + std::to_string(m.bytes) + " bytes";
  text += "\n";
  for (const auto& g : result.fused) {
    text += "  " + g.node + " (" + g.entry + "):";
    for (const std::string& n : g.replaced) text += " " + n;
    text += "\n";
  }
  report_text += text;
}

// Fuses elementwise chains (after the report, which describes the unfused nodes) and generates
// their code into `emit`'s modules.
Status GenerateCode(ir::Model& model, emit::EmitOptions& emit, CompileResult& result, PhaseTimer& timer, const std::string& target, bool rows) {
  GeneratedCode code;
  PRECIS_RETURN_IF_ERROR(FuseAndGenerate(model, {model.graph.get()}, {}, emit, code, target, rows));
  result.fused = std::move(code.fused);
  result.modules = std::move(code.modules);
  timer.Mark("fuse elementwise and generate code");
  return Status::Ok();
}

}  // namespace

Status FuseAndGenerate(const ir::Model& model, const std::vector<ir::Graph*>& graphs, const std::set<std::string>& keep, emit::EmitOptions& emit,
                       GeneratedCode& out, const std::string& target, bool rows, const std::set<std::string>& in_place_outputs) {
  std::vector<rt::fused::Program> programs;
  std::set<std::string> aliased;
  for (ir::Graph* g : graphs) {
    passes::FuseOptions fuse;
    fuse.rows = rows;
    if (auto it = model.opsets.find(""); it != model.opsets.end()) fuse.opset = it->second;
    std::vector<passes::FusedGroup> fused = passes::FuseElementwise(*g, keep, fuse);
    out.fused.insert(out.fused.end(), fused.begin(), fused.end());
    for (const auto& n : g->nodes()) {
      if (n->op_type() != "FusedElementwise") continue;
      const ir::Attribute* code = n->FindAttribute("code");
      const ir::Attribute* consts = n->FindAttribute("consts");
      auto p = rt::fused::Decode(code ? code->ints : std::vector<int64_t>{}, consts ? consts->floats : std::vector<float>{});
      if (!p.ok()) return p.status().WithContext("internal error: " + n->Describe());
      for (const ir::Value* v : n->outputs())
        if (v && in_place_outputs.count(v->name())) aliased.insert(p->EntryName());
      programs.push_back(std::move(*p));
    }
  }
  Status verified = ir::Verify(model);
  if (!verified.ok()) return verified.WithContext("internal error: the graph fails verification after elementwise fusion");
  if (programs.empty()) return Status::Ok();
  if (target == "cuda") {
    PRECIS_ASSIGN_OR_RETURN(std::vector<codegen::GpuModule> modules, codegen::GenerateGpuModules(programs));
    using Kind = emit::EmitOptions::Module::Kind;
    for (codegen::GpuModule& m : modules) {
      // PTX as the driver loads it: text with a terminating NUL.
      std::vector<uint8_t> ptx(m.ptx.begin(), m.ptx.end());
      ptx.push_back(0);
      out.modules.push_back({m.target + " ptx", ptx.size(), m.ms});
      emit.modules.push_back({"fused." + m.target + ".ptx", m.target, std::move(ptx), Kind::kPtx});
      if (m.cubin.empty()) continue;
      out.modules.push_back({m.target + " cubin", m.cubin.size(), m.ptxas_ms});
      emit.modules.push_back({"fused." + m.target + ".cubin", m.target, std::move(m.cubin), Kind::kCubin});
    }
  } else {
    PRECIS_ASSIGN_OR_RETURN(std::vector<codegen::CpuModule> modules, codegen::GenerateCpuModules(programs, aliased));
    emit.aliased_entries.insert(aliased.begin(), aliased.end());
    for (codegen::CpuModule& m : modules) {
      out.modules.push_back({m.target, m.object.size(), m.ms});
      emit.modules.push_back({"fused." + m.target, m.target, std::move(m.object)});
    }
  }
  AddGeneratedKernels(out, emit.report_json, emit.report_text);
  return Status::Ok();
}

Status Prepare(ir::Model& model, const CompileOptions& options, CompileResult& result) {
  result.nodes_before = model.graph->nodes().size();
  passes::PassContext context;
  PRECIS_ASSIGN_OR_RETURN(context.options.shapes, InputShapes(model, options));
  context.options.input_values = options.input_values;
  context.options.containers = options.containers;
  context.options.infer.fold_constants = options.fold_constants;
  if (options.precision == "fp16") context.options.fold_low = ir::DType::kF16;
  if (options.precision == "bf16") context.options.fold_low = ir::DType::kBF16;
  std::vector<std::string_view> names = {"specialize-inputs", "inline-if", "infer"};
  if (options.fold_batchnorm) names.push_back("fold-batchnorm");
  names.push_back("dce");
  NameUnnamedNodes(*model.graph);  // before the passes too: their messages name nodes
  PRECIS_RETURN_IF_ERROR(RunPasses(model, names, context, options, result));
  NameUnnamedNodes(*model.graph);
  result.folded_nodes = context.stats.folded_nodes;
  result.expanded_nodes = context.stats.expanded_nodes;
  result.sequence_ops = context.stats.sequence_ops;
  result.unrolled_loops = context.stats.unrolled_loops;
  result.stacked_loops = context.stats.stacked_loops;
  result.folded_batchnorms = context.stats.folded_batchnorms;
  return Status::Ok();
}

StatusOr<CompileResult> Compile(ir::Model& model, const CompileOptions& options) {
  passes::PrecisionOptions precision = options.precision_options;
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
  emit.dim_bounds = options.dim_bounds;
  emit::ReportInputs report;
  report.precision = options.precision;
  report.model = options.model_name;
  report.fp32_weight_bytes = emit::ConstantBytes(*model.graph);
  std::vector<std::string_view> names;
  if (mixed) {
    emit::EmitOptions measure = emit;
    measure.measure_only = true;
    PRECIS_ASSIGN_OR_RETURN(emit::EmittedPlan fp32_plan, emit::EmitPlan(model, measure));
    report.fp32_activation_bytes = fp32_plan.arena_bytes;
    timer.Mark("plan fp32 memory");
    names = {"patterns", "precision", "fold-casts", "fuse-casts", "dce"};
  }
  if (options.layout != "auto" && options.layout != "nchw") return InvalidArgument("unknown layout '" + options.layout + "' (auto or nchw)");
  if (options.target == "cuda") {
    if (options.fuse_epilogues) names.push_back("fuse-epilogues");
    if (mixed && options.layout == "auto") names.push_back("layout");
  } else if (options.target == "cpu") {
    if (options.fuse_epilogues) names.push_back("fuse-epilogues-cpu");
    if (options.layout == "auto") names.push_back("layout-cpu");
  }
  passes::PassContext context;
  context.options.precision = precision;
  PRECIS_RETURN_IF_ERROR(RunPasses(model, names, context, options, result));
  result.precision = context.stats.precision;
  result.epilogues = context.stats.epilogues;
  result.layout = context.stats.layout;
  timer.Restart();
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
  report.overflow_limit = precision.overflow_limit > 0 ? precision.overflow_limit : passes::MaxFinite(precision.low) / 2;
  result.report = emit::BuildPrecisionReport(*model.graph, report);
  if (mixed) result.low_regions = emit::FindLowRegions(*model.graph);
  timer.Mark("plan memory and report");
  emit.report_json = result.report.json;
  emit.report_text = result.report.text;
  if ((options.codegen && options.target == "cpu") || (options.gpu_codegen && options.codegen && options.target == "cuda")) {
    PRECIS_RETURN_IF_ERROR(GenerateCode(model, emit, result, timer, options.target, options.fuse_rows));
    result.report.json = emit.report_json;
    result.report.text = emit.report_text;
  }
  PRECIS_ASSIGN_OR_RETURN(result.plan, emit::EmitPlan(model, emit));
  timer.Mark("emit");
  return result;
}

}  // namespace precis::driver
