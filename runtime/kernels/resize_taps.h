// Resize and Upsample geometry shared by the CPU kernels (tensor_resize.cc) and the CUDA
// kernels (runtime/cuda/kernels/tensor_resize.cu): reads the attributes and the constant
// scales/sizes/roi inputs, and computes per dim and output coordinate the input indices read and
// their weights ("taps", following the ONNX reference: edge-clamped neighbours,
// exclude_outside renormalization, tf_crop_and_resize extrapolation, and antialias: linear and
// cubic filters stretched by 1 / scale when downsampling, so a dim reads 2 / scale or 4 / scale
// inputs per output). Both backends sum the
// tensor product of the taps of each output element, in the same order, in double.
#pragma once

#include <cstdint>
#include <vector>

#include "runtime/exec/step.h"

namespace precis::rt::resize {

enum class Mode { kNearest, kLinear, kCubic };

struct Tap {
  int64_t index;  // input coordinate, already clamped
  double weight;
};

// Per dim d, output coordinate y reads per_dim[d] taps from taps[tap_begin[d] + y * per_dim[d]]
// and is extrapolated when outside[outside_begin[d] + y] is 1.
struct Taps {
  Mode mode = Mode::kNearest;
  double extrapolation = 0;  // extrapolation_value
  std::vector<int64_t> per_dim, tap_begin, outside_begin;
  std::vector<Tap> taps;
  std::vector<uint8_t> outside;
};

// The taps of the Resize (or, with `upsample`, Upsample) step from `in` to `out` (same rank).
// Errors name the step. With `run_time`, scales may be a computed input (read when the kernel
// runs: a dynamic plan's value input).
Status BuildTaps(const KernelArgs& args, const Tensor& in, const Tensor& out, bool upsample, Taps* taps, bool run_time = false);

}  // namespace precis::rt::resize
