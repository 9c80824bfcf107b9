// The compile driver: runs the passes (through the registry and one PassPipeline) and emits the
// plan with its precision report. This is what `precis compile` runs:
//   specialize-inputs -> inline-if -> infer -> [fold-batchnorm] -> dce
//   -> [mixed precision: patterns -> precision -> fold-casts -> fuse-casts -> dce]
//   -> [GPU plans: fuse-epilogues -> layout | CPU plans: fuse-epilogues-cpu -> layout-cpu]
//   -> verify -> emit.
// The IR is verified after every pass that changed it in debug builds, with
// CompileOptions::verify_passes or PRECIS_VERIFY_PASSES=1 (errors name the pass), and always once
// before emission. It sits above passes/ and compiler/emit/: no pass includes it.
#pragma once

#include <map>
#include <set>
#include <string>
#include <vector>

#include "compiler/emit/plan_emitter.h"
#include "compiler/emit/precision_report.h"
#include "compiler/ir/graph.h"
#include "passes/fuse_elementwise.h"
#include "passes/pass.h"

namespace precis::driver {

struct GeneratedModule {
  std::string target;
  size_t bytes = 0;
  double ms = 0;
};

struct GeneratedCode {
  std::vector<passes::FusedGroup> fused;
  std::vector<GeneratedModule> modules;
};

// Fuses the elementwise chains of `graphs` (passes/fuse_elementwise.h; values named in `keep` stay
// materialized), generates their code into `emit.modules` (compiler/codegen/cpu_codegen.h), and
// adds the "generated_kernels" section to `emit`'s report (JSON and text). Runs after the report
// is built. Verifies `model` afterwards.
// `target` "cpu": x86-64 objects; "cuda": PTX and cubins (compiler/codegen/nvptx_codegen.h).
// `rows`: reductions over rows join the groups too (softmax, normalizations, trailing Reduce*).
// `in_place_outputs`: values that may be written over an input of their step (a training plan's
// state-update sources); the CPU kernels producing them get a body for that, and their entries go
// to `emit.aliased_entries`.
Status FuseAndGenerate(const ir::Model& model, const std::vector<ir::Graph*>& graphs, const std::set<std::string>& keep, emit::EmitOptions& emit,
                       GeneratedCode& out, const std::string& target = "cpu", bool rows = true,
                       const std::set<std::string>& in_place_outputs = {});

struct CompileOptions {
  std::map<std::string, std::vector<int64_t>> shapes;  // --shape NAME=1x3x224x224
  // --shape NAME=[2x3,4] (a sequence input's element shapes), --shape NAME=none (an absent
  // optional input): passes/specialize_inputs.h.
  passes::ContainerShapes containers;
  // --shape SYMBOL=LO..HI: bounds of a symbolic dim the plan keeps (a dynamic plan).
  std::map<std::string, std::pair<int64_t, int64_t>> dim_bounds;
  // Inputs compiled in as constants: a plan specialized to these values (they stop being inputs).
  std::map<std::string, ir::Tensor> input_values;
  std::string precision = "fp32";  // fp32 | fp16 | bf16
  int64_t batch = 0;               // > 0: the leading dim of every input not in `shapes`
  std::string target = "cpu";      // cpu | cuda (every step must have a CUDA kernel)
  bool strip_weights = false;      // benchmark plans without their weights (EmitOptions)
  // GPU plans (target cuda): fuse bias/activation epilogues; choose NHWC for tensor-core
  // convolutions ("auto") or keep every convolution NCHW ("nchw"). CPU plans: fuse a Conv's
  // Relu/Clip; run 2-D convolutions channels-last ("auto", passes/choose_layout.h) or NCHW.
  bool fuse_epilogues = true;
  std::string layout = "auto";
  passes::PrecisionOptions precision_options;  // `low` is set from `precision`
  bool fold_constants = true;
  // Conv -> BatchNormalization (inference form) or per-channel Mul/Add folded into the Conv's W
  // and B (fold_batchnorm.h).
  bool fold_batchnorm = true;
  uint64_t source_hash = 0;
  std::string model_name;  // for the report
  // Calibration facts for the report (the ranges themselves are in precision_options).
  std::string calibration_source;
  int calibration_samples = 0;
  // Verify the IR after every pass that changed it (also on in debug builds and with
  // PRECIS_VERIFY_PASSES=1 in the environment).
  bool verify_passes = false;
  // CPU plans: fuse elementwise chains (passes/fuse_elementwise.h) and generate their code for
  // x86-64-v3 and x86-64-v4 into the plan (compiler/codegen/cpu_codegen.h); `--no-codegen`.
  bool codegen = true;
  // With code generation: fuse reductions over rows (Softmax, LayerNormalization, trailing
  // ReduceSum/Mean/Max) with their elementwise neighbours too; `--no-row-fusion` keeps them as
  // library kernels (whose sums accumulate in double in their own order).
  bool fuse_rows = true;
  // CUDA plans: the same fusion, with the kernels generated as PTX for sm_80/sm_90 and assembled to
  // cubin where ptxas is installed (compiler/codegen/nvptx_codegen.h); `--codegen`. Off by default
  // until a GPU run has checked the generated kernels (README).
  bool gpu_codegen = false;
};

struct CompileResult {
  emit::EmittedPlan plan;
  size_t nodes_before = 0;
  size_t nodes_after = 0;
  int folded_nodes = 0;
  int expanded_nodes = 0;  // Attention, RMSNormalization... replaced by their parts
  int sequence_ops = 0;    // sequence and optional operators resolved when compiling
  int unrolled_loops = 0;  // Loops carrying a sequence, unrolled
  int stacked_loops = 0;   // Loops of a run-time trip count kept, their sequence appends made scan outputs
  int folded_batchnorms = 0;  // BatchNormalization, Mul and Add nodes folded into convolutions
  passes::PrecisionStats precision;
  passes::EpilogueStats epilogues;  // fuse-epilogues (GPU plans) or fuse-epilogues-cpu
  passes::LayoutStats layout;       // layout (GPU plans in FP16/BF16) or layout-cpu
  emit::Report report;
  std::vector<emit::LowRegion> low_regions;  // mixed precision: the regions that run in 16 bits
  std::vector<std::pair<std::string, double>> phase_ms;  // wall time of each pass and phase, in order
  std::vector<passes::FusedGroup> fused;  // generated kernels and the nodes each replaced
  std::vector<GeneratedModule> modules;   // generated code images, per target
};

StatusOr<CompileResult> Compile(ir::Model& model, const CompileOptions& options);

// The graph after shape inference and folding, before precision assignment (what calibration
// runs): specialize-inputs, inline-if, infer, fold-batchnorm, dce.
Status Prepare(ir::Model& model, const CompileOptions& options, CompileResult& result);

}  // namespace precis::driver
