// Data layout for GPU and CPU plans. Tensor cores run 16-bit convolutions on channels-last data: cuDNN
// takes NCHW tensors only by transposing them around each call (or with slower kernels). This
// pass puts every convolution that can use tensor cores in NHWC, together with the elementwise
// ops between them, so that the transposes happen once at the edges of each NHWC region:
//   - a Conv runs NHWC when X is FP16/BF16, it is 2-D, group is 1, C and M are multiples of 8
//     (16-byte rows for the tensor cores), W is a constant and the pads are symmetric; its W is
//     stored [M, kH, kW, C] (transposed at compile time) and the node gets layout = "NHWC";
//   - unary elementwise ops (Relu, Sigmoid, Clip...), binary ones (Add, Mul...) and Sum/Mean
//     whose non-scalar operands have the output's 4-D shape, or broadcast to it (rank 4, or
//     constants, which are permuted at compile time: a squeeze-and-excitation scale), join the
//     region of an NHWC input of the output's shape, and so does a Concat with an NHWC input (its axis renumbered: channels are axis 3;
//     an NCHW input is transposed in), and a MaxPool (no Indices), AveragePool,
//     GlobalAveragePool, GlobalMaxPool or inference BatchNormalization of an NHWC input
//     (layout = "NHWC" on the step; BatchNormalization's per-channel vectors are unchanged);
//   - a Transpose (perm 0,2,3,1) brings each NCHW input into a region, and one (perm 0,3,1,2)
//     gives back the NCHW tensor wherever a reader outside the region (or a graph output) needs
//     it: values outside the regions keep their names, shapes and layout. Where the permutation
//     moves no data (an [N, C, 1, 1] tensor) the edge is a Reshape instead, which runs in place.
// Every 16-bit Conv's evidence says which layout it got and why, so the report shows the
// decision; the plan's steps carry the `layout` attribute. Runs for `--device cuda` plans in
// FP16/BF16 (FP32 convolutions stay NCHW: no tensor cores without TF32, which FP32 plans refuse).
//
// CPU plans (LayoutTarget::kCpu) use the same regions with another rule for convolutions: every
// 2-D Conv with a constant W and FP32, FP16 or BF16 operands runs NHWC (any group, stride, padding
// or channel count), because oneDNN computes on channels-last activations either way: an NCHW
// convolution step reorders X into channels-last and Y back at every run. Batch and image dims may
// be symbolic (the channels must be static); a Reshape edge keeps a symbolic batch as 0.
#pragma once

#include <string>
#include <vector>

#include "compiler/ir/graph.h"

namespace precis::passes {

struct LayoutStats {
  int nhwc_convs = 0;   // convolutions that run NHWC
  int nchw_convs = 0;   // convolutions considered and left NCHW (GPU: 16-bit ones; their evidence says why)
  int region_ops = 0;   // elementwise ops, Concats, pools and BatchNormalizations inside NHWC regions
  int transposes = 0;   // transposes inserted at region edges
  int reshapes = 0;     // region edges where the permutation moves no data ([N, C, 1, 1]): Reshapes
};

enum class LayoutTarget { kCuda, kCpu };

LayoutStats ChooseLayout(ir::Graph& graph, LayoutTarget target = LayoutTarget::kCuda);

// The ops this pass may give layout = "NHWC": the kernels the CUDA backend takes NHWC steps for
// (runtime/cuda/capabilities.h kNhwcKernels, which this layer may not include; a test keeps the
// two lists equal).
const std::vector<std::string>& NhwcOps();

}  // namespace precis::passes
