// The data-movement operators that are one strided read of their input (Transpose, Slice,
// Expand, Tile, DepthToSpace, SpaceToDepth), as views built once at load, and Pad's per-dim
// index maps. Shared by the CPU kernels (runtime/cpu/kernels/tensor.cc, tensor_fill.cc) and the CUDA kernels
// (runtime/cuda/kernels/tensor.cu, tensor_fill.cu), so both backends read the same attributes
// and constant inputs and refuse the same steps. Host code only: nvcc includes this header too.
#pragma once

#include <cstdint>
#include <vector>

#include "runtime/exec/step.h"

namespace precis::rt {

// Reads a source tensor in another order: element k of the dense destination (row-major over
// `dims`) is source element offset + sum(coord[d] * strides[d]). Strides may be 0 (broadcast)
// or negative (reversed slices).
struct StridedView {
  std::vector<int64_t> dims;
  std::vector<int64_t> strides;
  int64_t offset = 0;
};

// Slice of one axis of size `dim` (ONNX rules: negative values count from the end, then
// clamping; a negative step walks backwards): the first index and the element count. The
// compiler's shape inference uses it too.
struct SliceAxis {
  int64_t start = 0, count = 0;
};
SliceAxis SliceRange(int64_t start, int64_t end, int64_t step, int64_t dim);

// Each fills `view` (empty on entry) for the step in `args` reading `in` and writing `out`: its
// dims are the output's or a finer split of them. Errors name the step.

// perm (default: reversed dims).
Status TransposeView(const KernelArgs& args, const Tensor& in, const Tensor& out, StridedView& view);
// starts, ends, axes, steps: constant inputs, or attributes (the kernel form of versions before
// 10); ONNX clamping.
Status SliceView(const KernelArgs& args, const Tensor& in, const Tensor& out, StridedView& view);
// Broadcast to the output's shape (stride 0 on broadcast dims).
Status ExpandView(const KernelArgs& args, const Tensor& in, const Tensor& out, StridedView& view);
// A view of rank 2r: output dim d is [repeats[d], in.dims[d]] with the repeat stride 0.
Status TileView(const KernelArgs& args, const Tensor& in, const Tensor& out, StridedView& view);
// Output [N, C', H*b, W*b] read as [N, C', H, b, W, b] from input channels
// (DCR: c = (b1*b + b2)*C' + c'; CRD: c = c'*b*b + b1*b + b2).
Status DepthToSpaceView(const KernelArgs& args, const Tensor& in, const Tensor& out, StridedView& view);
// Output [N, C*b*b, H/b, W/b] read as [N, b, b, C, H/b, W/b] (output channel (b1*b + b2)*C + c).
Status SpaceToDepthView(const KernelArgs& args, const Tensor& in, const Tensor& out, StridedView& view);

// Pad (opsets 2-23: pads and axes as attributes or constant inputs; constant, reflect, edge and
// wrap modes; negative pads crop): per dim, the input coordinate each output coordinate reads,
// -1 where it takes the constant value. With `run_time`, pads may be a computed input (read when
// the kernel runs).
Status PadIndexMaps(const KernelArgs& args, const Tensor& in, const Tensor& out, std::vector<std::vector<int64_t>>* maps, bool run_time = false);

}  // namespace precis::rt
