// FusedElementwise nodes (ops/fused.cc): questions the emitter asks of their programs.
#pragma once

#include "compiler/ir/graph.h"

namespace precis::ops {

// Whether the FusedElementwise node `n` may write output `output` over the bytes of input
// `input` (runtime/kernels/fused_program.h InPlaceOk). False for any other node.
bool FusedInPlaceOk(const ir::Node& n, int input, int output);

}  // namespace precis::ops
