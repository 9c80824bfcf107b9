// BatchNormalization folding: an inference-form BatchNormalization that alone reads a Conv's
// output becomes part of that Conv:
//   y = BN(Conv(X, W, B), scale, bias, mean, var)   becomes   y = Conv(X, W', B')
//   s[m] = scale[m] / sqrt(var[m] + epsilon),  W'[m, ...] = W[m, ...] * s[m],
//   B'[m] = (B[m] - mean[m]) * s[m] + bias[m]          (B = 0 when the Conv had none)
// computed in double and stored in W's dtype (new constants: W or B may have other readers).
// W, B and the four statistics must be constants; the Conv's output must have no other reader
// and not be a graph output. Kept apart where a folded value would exceed half of FP16's
// largest finite value (so that a 16-bit plan can still store the weights) or is not finite.
// The Conv keeps its name and writes the BatchNormalization's output value (so graph output
// names stay); its precision evidence names the folded node. Runs in Prepare, before precision
// assignment: inference plans only (training keeps BatchNormalization's parameters).
#pragma once

#include "compiler/ir/graph.h"

namespace precis::passes {

// Returns how many BatchNormalization nodes were folded.
int FoldBatchNorm(ir::Graph& graph);

}  // namespace precis::passes
