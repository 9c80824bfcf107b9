// RemoveDeadCode (see dead_code.h).
#include "passes/dead_code.h"

#include <algorithm>

namespace precis::passes {

bool RemoveDeadCode(ir::Graph& graph) {
  bool changed = false;
  auto is_output = [&](const ir::Value* v) {
    return std::find(graph.outputs().begin(), graph.outputs().end(), v) != graph.outputs().end();
  };
  // Walk backwards so that a whole dead chain goes in one sweep.
  for (size_t i = graph.nodes().size(); i-- > 0;) {
    ir::Node* n = graph.nodes()[i].get();
    bool live = false;
    for (const ir::Value* v : n->outputs())
      if (v && (!v->uses().empty() || is_output(v))) live = true;
    if (live) continue;
    graph.RemoveNode(n);
    changed = true;
  }
  return changed;
}

}  // namespace precis::passes
