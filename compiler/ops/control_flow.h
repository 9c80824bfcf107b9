// Control-flow operators (If, Loop, Scan): their bodies are subgraphs that the runtime runs as
// nested programs of the plan. Shape inference visits a body after giving its inputs the types
// BodyInputTypes returns; the operator's own inference then reads the body outputs' types.
// Plans have static shapes, so a body's outputs must have one static type per run: an If whose
// branches disagree, a loop-carried value whose shape changes, or scan outputs of a length known
// only at run time are refused with the reason.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "compiler/ir/graph.h"

namespace precis::ops {

// The node's body graphs with their attribute names ("then_branch", "else_branch", "body"), in
// attribute order; empty for other operators.
std::vector<std::pair<std::string, ir::Graph*>> ControlFlowBodies(const ir::Node& node);

// The types the inputs of `body` (attribute `attr` of `node`) take, from the node's input types.
StatusOr<std::vector<ir::Type>> BodyInputTypes(const ir::Node& node, const std::string& attr, int64_t opset);

// Loop: the number of iterations when it is known at compile time (a constant trip count and a
// condition that cannot turn false), else -1.
int64_t StaticTripCount(const ir::Node& loop);

// The symbol a Loop body's iteration number is known as to shape inference (its known value):
// a dim, so x[i:i+1] has length 1. Body dims that depend on it must not decrease as it grows
// (the runtime binds it per iteration and plans the body's memory for the last iteration).
std::string IterationSymbol(const ir::Node& loop);

// Loop: the largest iteration number, max(iterations - 1, 0), over constants and the values the
// plan binds (a trip count M given as an input); nullopt when the loop has no such bound.
std::optional<ir::DimExpr> IterationBound(const ir::Node& loop);

}  // namespace precis::ops
