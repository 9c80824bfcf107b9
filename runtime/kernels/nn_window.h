// Sliding-window geometry shared by the convolution and pooling kernels: reads kernel, strides,
// dilations, pads, auto_pad and ceil_mode, resolves SAME_* padding and computes output sizes with
// the same formulas as the compiler's shape inference (compiler/ops/nn.cc). Spatial dims are
// stored right-aligned in 3 slots (leading slots are size 1), so kernels loop over D, H, W.
#pragma once

#include <array>
#include <string>
#include <vector>

#include "runtime/exec/step.h"

namespace precis::rt {

struct Window {
  static constexpr int kMaxSpatial = 3;
  int spatial = 0;  // number of real spatial dims
  std::array<int64_t, kMaxSpatial> in{1, 1, 1}, out{1, 1, 1}, kernel{1, 1, 1}, stride{1, 1, 1}, dilation{1, 1, 1},
      pad_begin{0, 0, 0}, pad_end{0, 0, 0};

  int64_t InSize() const { return in[0] * in[1] * in[2]; }
  int64_t OutSize() const { return out[0] * out[1] * out[2]; }
  int64_t KernelSize() const { return kernel[0] * kernel[1] * kernel[2]; }
};

// For one output index along one spatial dim: the input coordinate of kernel offset 0 (`start`),
// the kernel offsets [lo, hi) that land inside the input, and the count of offsets inside the
// input and its explicit pads (`padded`; offsets in a ceil_mode tail never count).
struct WindowRange {
  int64_t start = 0, lo = 0, hi = 0, padded = 0;
};

// The ranges of every output index along slot `d` (0..2) of `w`.
std::vector<WindowRange> WindowRanges(const Window& w, int d);

// Fills `w` for input spatial dims `in` and kernel `kernel` (same length, 1..3). Pooling passes
// allow_ceil; convolutions ignore ceil_mode. Errors name the node.
Status ReadWindow(const KernelArgs& args, const std::vector<int64_t>& in, const std::vector<int64_t>& kernel, bool allow_ceil,
                  Window* w);

// ConvTranspose (W is [C, M/group, k...]): output size and begin padding per spatial dim follow
// the ONNX reference: output_shape (or in * stride for SAME_*) fixes the size and SAME_* splits
// the total padding (the odd unit at the end for SAME_UPPER); otherwise pads are taken as given.
Status ReadTransposeWindow(const KernelArgs& args, const std::vector<int64_t>& in, const std::vector<int64_t>& kernel, Window* w);

// Checks that `t` has dims [n, c, w.out...] (for the kernel's precomputed output shape).
Status CheckWindowOutput(const KernelArgs& args, const Tensor& t, int64_t n, int64_t c, const Window& w, const char* what);

}  // namespace precis::rt
