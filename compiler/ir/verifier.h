// The IR verifier: checks what every pass may assume. SSA (each value produced once, names
// unique in their graph and not shadowing an enclosing graph), uses recorded on their values,
// nodes in topological order, constants whose type matches their data, and subgraph scoping
// (a subgraph uses only its own values and values its enclosing graphs define before the node
// that owns it). Returns InvalidArgument naming the graph, node and value on the first failure.
#pragma once

#include "compiler/ir/graph.h"

namespace precis::ir {

Status Verify(const Model& model);
Status VerifyGraph(const Graph& graph);

}  // namespace precis::ir
