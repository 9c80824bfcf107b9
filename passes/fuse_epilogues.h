// Epilogue fusion for GPU plans: the work that follows a matrix product or a convolution moves
// into the library call's epilogue (cuBLASLt bias/ReLU/GELU epilogues; the convolution's bias
// and activation), so the output is written once instead of read and written again per op:
//   MatMul(A, B) -> Add(bias) [-> act]   becomes  Gemm(A, B, bias) {activation}   (B a matrix,
//       bias a row of N values; A of rank > 2 is viewed as [rows, K] by Reshapes, which alias)
//   MatMul | Gemm -> act                  becomes  MatMul | Gemm {activation}
//   Conv | ConvTranspose -> Relu          becomes  Conv | ConvTranspose {activation = "Relu"}
// act is Relu, Gelu (approximate none or tanh: "Gelu" / "GeluTanh") or the decomposed Erf GELU
// x * 0.5 * (1 + Erf(x / sqrt 2)) that exporters write. Only single-use intermediate tensors
// whose dtype is the product's output dtype are fused, so no value changes dtype. The fused
// node keeps the product's name and precision record; its evidence names what was fused.
// Runs for `--device cuda` plans after the precision passes (the CPU kernels accept the same
// attribute, so these plans still run on the CPU as the reference).
#pragma once

#include "compiler/ir/graph.h"

namespace precis::passes {

struct EpilogueStats {
  int bias = 0;         // MatMul + Add rewritten as Gemm with C
  int activations = 0;  // activations moved into a product or convolution
};

EpilogueStats FuseEpilogues(ir::Graph& graph);

}  // namespace precis::passes
