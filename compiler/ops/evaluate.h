// Compile-time evaluation of one node through the runtime's reference kernel (the step evaluator
// of runtime/exec/evaluator.h), so that constant folding and the runtime share one implementation
// of every operator's semantics.
#pragma once

#include <vector>

#include "compiler/ir/graph.h"

namespace precis::ops {

// Evaluates `node` (kernel `kernel_name`) on constant `inputs` (nullptr for omitted ones),
// producing tensors of `output_types` (static tensor types). Unimplemented when the kernel is
// missing or a type has no runtime form (strings).
StatusOr<std::vector<ir::Tensor>> EvaluateNode(const ir::Node& node, const std::string& kernel_name, int64_t opset,
                                               const std::vector<const ir::Tensor*>& inputs,
                                               const std::vector<ir::Type>& output_types);

}  // namespace precis::ops
