// Compile (see pipeline.h).
#include "passes/pipeline.h"

#include "compiler/ir/verifier.h"
#include "passes/dead_code.h"
#include "passes/infer_shapes.h"
#include "passes/specialize_inputs.h"

namespace precis::passes {

StatusOr<CompileResult> Compile(ir::Model& model, const CompileOptions& options) {
  if (options.precision != "fp32") {
    if (options.precision == "fp16" || options.precision == "bf16")
      return Unimplemented("--precision " + options.precision + " is not available yet: only fp32 plans can be built");
    return InvalidArgument("unknown precision '" + options.precision + "' (fp32, fp16 or bf16)");
  }
  CompileResult result;
  result.nodes_before = model.graph->nodes().size();
  PRECIS_RETURN_IF_ERROR(SpecializeInputs(model, options.shapes, options.input_values));
  InferOptions infer;
  infer.fold_constants = options.fold_constants;
  PRECIS_ASSIGN_OR_RETURN(InferStats stats, InferShapesAndFold(model, infer));
  result.folded_nodes = stats.folded_nodes;
  RemoveDeadCode(*model.graph);
  Status verified = ir::Verify(model);
  if (!verified.ok()) return verified.WithContext("internal error: the graph fails verification after the passes");
  result.nodes_after = model.graph->nodes().size();
  emit::EmitOptions emit;
  emit.precision = options.precision;
  emit.source_hash = options.source_hash;
  PRECIS_ASSIGN_OR_RETURN(result.plan, emit::EmitPlan(model, emit));
  return result;
}

}  // namespace precis::passes
