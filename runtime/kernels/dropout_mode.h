// Inference Dropout: the step is the identity when training_mode (input 2) is absent or false, or
// when it is true with a constant ratio (input 1) of 0 (torchvision attention blocks export
// Dropout so). Any other training-mode Dropout would drop values: the compiler refuses it, and
// the CPU and CUDA kernels refuse a plan that asks for it.
#pragma once

#include <cstring>
#include <string>

#include "runtime/base/half.h"
#include "runtime/exec/step.h"

namespace precis::rt {

// True when the Dropout step is the identity; otherwise false with the reason in `why`. A
// training_mode computed at run time passes here and is checked when the step runs.
inline bool DropoutIsIdentity(const KernelArgs& args, std::string* why) {
  const Tensor* mode = args.in(2);
  if (!mode || !mode->is_constant || mode->numel == 0 || mode->data[0] == 0) return true;
  const Tensor* ratio = args.in(1);
  if (!ratio || !ratio->is_constant || ratio->numel != 1) {
    *why = "training mode with a ratio that is not a constant 0 is not supported in an inference plan";
    return false;
  }
  double r = -1;
  const uint8_t* p = ratio->data;
  switch (ratio->dtype) {
    case DataType::kF32: { float f; std::memcpy(&f, p, 4); r = f; break; }
    case DataType::kF64: std::memcpy(&r, p, 8); break;
    case DataType::kF16: { uint16_t h; std::memcpy(&h, p, 2); r = HalfToFloat(h); break; }
    case DataType::kBF16: { uint16_t h; std::memcpy(&h, p, 2); r = Bf16ToFloat(h); break; }
    default: break;
  }
  if (r == 0) return true;
  *why = "training mode with ratio " + std::to_string(r) + " is not supported in an inference plan";
  return false;
}

}  // namespace precis::rt
