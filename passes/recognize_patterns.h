// Pattern recognition before precision assignment: finds decomposed operations in exported graphs
// so that the precision policy applies to the real operation, not to its pieces. Recognized
// nodes get a PrecisionRecord whose reason names the pattern and whose evidence describes it;
// AssignPrecision turns that into the class of the whole operation:
//   layernorm-pattern      ReduceMean, Sub, Pow(2)|Mul, ReduceMean, [Add eps], Sqrt, Div -> keep-fp32
//   rmsnorm-pattern        Pow(2)|Mul, ReduceMean, [Add eps], Sqrt, Div|Reciprocal(+Mul)  -> keep-fp32
//   gelu-pattern           x * 0.5 * (1 + Erf(x / sqrt 2)), and the Tanh form with Pow(x, 3) -> follow
//   cross-entropy-pattern  Softmax -> Log, or LogSoftmax, -> Gather*/Neg/NegativeLogLikelihoodLoss -> keep-fp32
//   attention-pattern      MatMul -> [Div|Mul scale] -> [Add mask] -> Softmax -> MatMul: evidence only
//   squeeze-excite-pattern GlobalAveragePool|ReduceMean -> Conv 1x1 -> act -> Conv 1x1 -> Sigmoid|HardSigmoid,
//                          scaling the pooled feature map by Mul -> keep-fp32 (the pool reads the
//                          16-bit map; the Mul stays with the map and reads the gate cast down)
// Returns the number of patterns found.
#pragma once

#include "compiler/ir/graph.h"

namespace precis::passes {

int RecognizePatterns(ir::Graph& graph);

}  // namespace precis::passes
