// Cast fusion: a Cast between two float dtypes whose input is written by a computing node
// (compute, follow or keep-fp32 class) for that Cast alone is folded into the node, which then
// writes the cast's dtype directly: kernels compute in FP32 and round once when storing, so
//   y = Op(...): f32; z = Cast(y -> f16)   becomes   z = Op(...): f16   (same bits), and
//   y = Op(...): f16; z = Cast(y -> f32)   becomes   z = Op(...): f32   (one rounding fewer).
// First, a cast after a Transpose that feeds it alone moves in front of the Transpose, which then
// moves the cast's dtype (fewer bytes for a 16-bit one; a transposed master weight's cast becomes
// a cast of the master). Runs after FoldCasts. Casts producing graph outputs are left alone (the
// output keeps its name). Returns whether the graph changed.
#pragma once

#include "compiler/ir/graph.h"

namespace precis::passes {

bool FuseCasts(ir::Graph& graph);

}  // namespace precis::passes
