// The pass interface (XLA's HloPassInterface in small): a pass has a name, a one-line
// description, and Run, which rewrites a model and returns whether it changed anything (the
// pipeline verifies only after passes that did). Passes that need settings (the precision
// policy, shapes to specialize to, folding limits) read them from the PassContext given when the
// pass is created, and add what they did to its PassStats, so one registry (pass_registry.h)
// serves both `precis opt` and the compile driver. Errors a user can cause (an unknown operator,
// contradictory overrides) come back as a Status; the pipeline adds the pass's name.
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "compiler/ir/graph.h"
#include "passes/choose_layout.h"
#include "passes/fuse_epilogues.h"
#include "passes/infer_shapes.h"
#include "passes/precision.h"
#include "passes/specialize_inputs.h"

namespace precis::passes {

// Settings of the passes that take any.
struct PassOptions {
  InferOptions infer;                                  // infer
  PrecisionOptions precision;                          // precision
  ir::DType fold_low = ir::DType::kUndefined;          // fold-batchnorm: the 16-bit format of the plan, if any
  std::map<std::string, std::vector<int64_t>> shapes;  // specialize-inputs: dims per input name
  std::map<std::string, ir::Tensor> input_values;      // specialize-inputs: inputs made constants
  ContainerShapes containers;                          // specialize-inputs: sequence and optional inputs
};

// What the passes did, summed over every run of each (the compile result reports these).
struct PassStats {
  int folded_nodes = 0;       // infer: nodes replaced by constants
  int expanded_nodes = 0;     // infer: operators replaced by their parts (ops/expand.h)
  int sequence_ops = 0;       // infer: sequence and optional operators resolved (sequences.h)
  int unrolled_loops = 0;     // infer: Loops carrying a sequence, unrolled
  int stacked_loops = 0;      // infer: Loops kept, their sequence appends made scan outputs
  int inlined_ifs = 0;        // inline-if
  int folded_batchnorms = 0;  // fold-batchnorm: nodes folded into convolutions
  int patterns = 0;           // patterns: decomposed operations recognized
  PrecisionStats precision;   // precision
  EpilogueStats epilogues;    // fuse-epilogues, fuse-epilogues-cpu
  LayoutStats layout;         // layout, layout-cpu
};

struct PassContext {
  PassOptions options;
  PassStats stats;
};

class Pass {
 public:
  virtual ~Pass() = default;
  virtual std::string_view name() const = 0;
  virtual std::string_view description() const = 0;  // one line, for `precis opt --help`
  // Rewrites `model`; true when anything in it changed (nodes, values, types, attributes or
  // precision records).
  virtual StatusOr<bool> Run(ir::Model& model) = 0;
};

}  // namespace precis::passes
