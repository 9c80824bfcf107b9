// Training plans' state updates written in place (plan_emitter.cc): which updates of a program
// the step computing the new value can write straight into the state tensor, so that no copy runs
// when the program ends.
#pragma once

#include <set>
#include <vector>

#include "compiler/emit/plan_emitter.h"

namespace precis::emit {

struct InPlaceUpdate {
  const ir::Value* source;  // the update's new value: from now on the state tensor itself
  const ir::Value* state;   // the state's graph value (its value before the program)
};

// The updates of `src` written in place, given the nodes the program runs (`needed`) and its
// outputs. Allowed where
//  - the source is computed by a step of the program itself (not in a body, not an output);
//  - that step runs under the update's predicate (or neither has one), so a skipped update leaves
//    the state untouched;
//  - no step after it reads the state's old value, and where that step reads it itself, it is a
//    fused elementwise step of a CPU plan whose program reads that input element for element
//    before writing the output there (ops/fused.h) and whose generated code has a body for that
//    (EmitOptions::aliased_entries);
//  - the source and the state have one dtype and static shape.
// A training step's optimizer then updates each weight, its moments and its 16-bit working copy
// in one pass, instead of writing new values to the arena and copying them (about 5% of a
// ResNet-18 step).
std::vector<InPlaceUpdate> StateUpdatesInPlace(const ProgramSource& src, const std::set<const ir::Node*>& needed,
                                               const std::vector<const ir::Value*>& outputs, const EmitOptions& options);

// Puts the nodes that compute `src`'s state updates under `predicate`: every node of the graph
// whose outputs are read only by nodes so chosen, or are the sources of updates that run under
// `predicate` (src.update_predicates), and are no program output, graph output or the predicate
// itself (src.predicates gains them). A skipped step then computes nothing, and those updates
// can be written in place (StateUpdatesInPlace) instead of copied at the end. For backends that
// run any predicated step (the CPU; the CUDA backend runs predicated copies only).
void PredicateUpdateSources(ProgramSource& src, const std::string& predicate);

}  // namespace precis::emit
