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
//
// CPU plans (EpilogueTarget::kCpu) fuse only a Conv's Relu or Clip (constant bounds: ReLU6),
// which oneDNN's convolution applies to the FP32 result as a post-op before it stores Y (rounding
// is monotone, so a 16-bit Y gets the unfused values); Clip gets activation = "Clip" with
// activation_min / activation_max. Bias and MatMul chains
// stay as they are there (the generated elementwise kernels take them). A fused Relu maps NaN to
// 0 as every Precis Relu does; a fused Clip maps NaN to its min (oneDNN's post-op, like
// onnxruntime's fused Conv+Clip), where the Clip operator keeps NaN.
#pragma once

#include "compiler/ir/graph.h"

namespace precis::passes {

struct EpilogueStats {
  int bias = 0;         // MatMul + Add rewritten as Gemm with C
  int activations = 0;  // activations moved into a product or convolution
};

enum class EpilogueTarget { kCuda, kCpu };

EpilogueStats FuseEpilogues(ir::Graph& graph, EpilogueTarget target = EpilogueTarget::kCuda);

}  // namespace precis::passes
