// Reverse-mode automatic differentiation over the IR: appends to a graph the nodes that compute
// the gradient of a loss value with respect to chosen values (weights, inputs), using the
// per-op gradient rules of compiler/ops/gradient.h.
//
// Only nodes on a path from a chosen value to the loss are differentiated (what the loss needs);
// gradients of a value used several times (fan-out, shared or tied weights) are summed; inputs a
// rule declares non-differentiable (indices, shapes, axes) get none. Forward values the backward
// nodes read stay alive through the memory planner, as any value with later uses.
// Errors: unknown loss or value names, a loss that is not a float tensor, and every node on the
// path without a gradient rule, listed at once with node names.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "compiler/ir/graph.h"

namespace precis::passes {

struct GradientResult {
  std::map<std::string, ir::Value*> grads;  // value name -> d loss / d value (same shape and dtype)
  int backward_nodes = 0;
};

// The gradient of `loss` (seeded with ones: for a non-scalar loss, the gradient of its sum).
// A chosen value the loss does not depend on gets a zero gradient.
StatusOr<GradientResult> BuildGradients(ir::Model& model, const std::string& loss, const std::vector<std::string>& wrt);

}  // namespace precis::passes
