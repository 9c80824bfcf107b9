// If inlining: an If node whose condition is known at compile time (a constant: an initializer,
// a Constant node, or an input specialized to its value) is replaced by the nodes of the branch
// it takes, so the plan has no control flow. The branch's constants and nodes are copied into the
// enclosing graph under fresh names; each If output becomes an Identity of the branch output (the
// output values keep their names). Branches that themselves hold subgraphs are left alone, as are
// Ifs whose condition is computed at run time (shape inference then reports them as unsupported).
// Returns the number of Ifs inlined.
#pragma once

#include "compiler/ir/graph.h"

namespace precis::passes {

int InlineConstantIf(ir::Graph& graph);

}  // namespace precis::passes
