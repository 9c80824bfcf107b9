// Per-channel affine folding: the inference-form BatchNormalization, or the Mul or Add by a
// per-channel constant, that alone reads a Conv's output becomes part of that Conv:
//   y = BN(Conv(X, W, B), scale, bias, mean, var)   becomes   y = Conv(X, W', B')
//   s[m] = scale[m] / sqrt(var[m] + epsilon),  t[m] = bias[m] - mean[m] * s[m]
//   y = Mul(Conv(X, W, B), k)  (s = k, t = 0)       y = Add(Conv(X, W, B), k)  (s = 1, t = k)
//   W'[m, ...] = W[m, ...] * s[m],  B'[m] = B[m] * s[m] + t[m]   (B = 0 when the Conv had none)
// k is one value or has 1 in every dim but the channel axis (right-aligned broadcasting), as
// Caffe-converted models write their scale layers. Repeated until nothing folds (Conv -> Mul ->
// Add folds in two rounds). Computed in double and stored in W's dtype, as new constants (W or B
// may have other readers). W, B and the statistics must be constants; the Conv's output must
// have no other reader and not be a graph output. Kept apart where a folded value would exceed
// half of FP16's largest finite value (so that a 16-bit plan can still store the weights) or is
// not finite. The Conv keeps its name and writes the folded node's output value (so graph output
// names stay); its precision evidence names what was folded. A per-channel Mul or Add that alone
// reads an inference-form BatchNormalization's output (Caffe2 exports BN, then a scale layer, in
// front of each convolution: BN -> Mul -> Add -> Relu -> Conv) folds into that
// BatchNormalization instead: y = x * s + t, so scale' = scale * k, B' = B * k for a Mul by k and
// B' = B + k for an Add (new constants in the parameters' dtypes, same limits). Runs in Prepare,
// before precision assignment: inference plans only (training keeps the BatchNormalization
// parameters). In a 16-bit plan (`low` FP16 or BF16) a fold is also refused where the folded W
// would lose its values to the format's range (mostly subnormal, as with 1/sigma ~ 1e4) while W
// would not; the node left unfolded says so in its precision evidence.
#pragma once

#include "compiler/ir/graph.h"

namespace precis::passes {

// Returns how many nodes were folded into convolutions and BatchNormalizations.
int FoldBatchNorm(ir::Graph& graph, ir::DType low = ir::DType::kUndefined);

}  // namespace precis::passes
