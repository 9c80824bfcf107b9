// Cast folding: removes casts that change nothing and shortens chains whose first step is exact.
//   Cast(x: T -> T)                 -> x
//   Cast(Cast(x: A -> B) -> A)      -> x               when A -> B is exact (a round trip)
//   Cast(Cast(x: A -> B) -> C)      -> Cast(x: A -> C) when A -> B is exact
// A -> B is exact when B holds every value of A: f16/bf16 -> f32/f64, f32 -> f64, integer
// widening, bool -> any number. Lossy first steps (f32 -> f16 -> f32) are kept: they round.
// A cast whose output is a graph output keeps its node (the output keeps its name). Returns
// whether the graph changed; dead casts are removed.
#pragma once

#include "compiler/ir/graph.h"

namespace precis::passes {

bool FoldCasts(ir::Graph& graph);

// Whether every value of `from` is exactly representable in `to`.
bool IsExactConversion(ir::DType from, ir::DType to);

}  // namespace precis::passes
