// The compile pipeline: specialize inputs -> infer shapes and fold constants -> remove dead
// code -> verify -> emit the plan. This is what `precis compile` runs.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "compiler/emit/plan_emitter.h"
#include "compiler/ir/graph.h"

namespace precis::passes {

struct CompileOptions {
  std::map<std::string, std::vector<int64_t>> shapes;  // --shape NAME=1x3x224x224
  // Inputs compiled in as constants: a plan specialized to these values (they stop being inputs).
  std::map<std::string, ir::Tensor> input_values;
  std::string precision = "fp32";
  bool fold_constants = true;
  uint64_t source_hash = 0;
};

struct CompileResult {
  emit::EmittedPlan plan;
  size_t nodes_before = 0;
  size_t nodes_after = 0;
  int folded_nodes = 0;
};

StatusOr<CompileResult> Compile(ir::Model& model, const CompileOptions& options);

}  // namespace precis::passes
