// Removes nodes none of whose outputs is used or is a graph output, repeatedly, and constants
// nothing uses. Returns whether the graph changed.
#pragma once

#include "compiler/ir/graph.h"

namespace precis::passes {

bool RemoveDeadCode(ir::Graph& graph);

}  // namespace precis::passes
