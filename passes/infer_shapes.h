// Shape and type inference with constant folding, in one walk over the graph in topological
// order: each node's OpDef infers its output types (symbolic dims propagate), and a foldable node
// whose inputs are all constants is evaluated by the runtime's kernel and replaced by constants,
// so that exports full of Shape/Gather/Concat plumbing become static once input shapes are known.
// Operators Precis does not know are listed all at once, with node names, in one error.
#pragma once

#include "compiler/ir/graph.h"

namespace precis::passes {

struct InferOptions {
  bool fold_constants = true;
  int64_t max_fold_bytes = int64_t(64) << 20;  // larger results stay computations
};

struct InferStats {
  int folded_nodes = 0;
  int expanded_nodes = 0;  // operators replaced by their expansion (ops/expand.h)
  int sequence_ops = 0;    // sequence and optional operators resolved (passes/sequences.h)
  int unrolled_loops = 0;  // Loops carrying a sequence, unrolled
  int stacked_loops = 0;   // Loops kept, their sequence appends made scan outputs
};

StatusOr<InferStats> InferShapesAndFold(ir::Model& model, const InferOptions& options = {});

}  // namespace precis::passes
