// Inference Dropout: the step is the identity when training_mode (input 2) is absent or false, or
// when the ratio (input 1) is 0 (torchvision attention blocks export Dropout with training_mode
// true and ratio 0). Any other training-mode Dropout would drop values: the compiler refuses it
// when both are constants, and the kernels refuse a run whose run-time values ask for it.
#pragma once

#include <cstring>
#include <string>

#include "runtime/base/half.h"
#include "runtime/exec/step.h"

namespace precis::rt {

// The value of a one-element float tensor (the ratio), or -1 when it is not one.
inline double DropoutRatio(const Tensor* ratio) {
  if (!ratio || ratio->numel != 1) return -1;
  double r = -1;
  const uint8_t* p = ratio->data;
  switch (ratio->dtype) {
    case DataType::kF32: { float f; std::memcpy(&f, p, 4); r = f; break; }
    case DataType::kF64: std::memcpy(&r, p, 8); break;
    case DataType::kF16: { uint16_t h; std::memcpy(&h, p, 2); r = HalfToFloat(h); break; }
    case DataType::kBF16: { uint16_t h; std::memcpy(&h, p, 2); r = Bf16ToFloat(h); break; }
    default: break;
  }
  return r;
}

enum class DropoutPlan {
  kIdentity,     // the identity whatever the run
  kCheckMode,    // training_mode is computed at run time (the ratio is a constant other than 0, or absent)
  kCheckValues,  // the ratio is computed at run time: training_mode and the ratio are read when the step runs
  kRefused,      // training mode with a constant ratio other than 0
};

// What the kernels must do for a Dropout step; the reason in `why` when refused.
inline DropoutPlan PlanDropout(const KernelArgs& args, std::string* why) {
  const Tensor* mode = args.in(2);
  if (!mode || mode->numel == 0 || (mode->is_constant && mode->data[0] == 0)) return DropoutPlan::kIdentity;
  const Tensor* ratio = args.in(1);
  if (ratio && !ratio->is_constant) return DropoutPlan::kCheckValues;
  double r = ratio ? DropoutRatio(ratio) : 0.5;  // 0.5: the default when the ratio is omitted
  if (r == 0) return DropoutPlan::kIdentity;
  if (!mode->is_constant) return DropoutPlan::kCheckMode;
  *why = "training mode with ratio " + std::to_string(r) + " is not supported in an inference plan";
  return DropoutPlan::kRefused;
}

// For a step planned kCheckMode or kCheckValues, with the tensors' bytes on the host: true when
// this run is the identity (training_mode false, or a ratio of 0); otherwise the reason.
inline bool DropoutRunIsIdentity(const KernelArgs& args, std::string* why) {
  const Tensor* mode = args.in(2);
  if (!mode || mode->numel == 0 || mode->data[0] == 0) return true;
  const Tensor* ratio = args.in(1);
  double r = ratio ? DropoutRatio(ratio) : 0.5;
  if (r == 0) return true;
  *why = "training mode (set at run time) with ratio " + std::to_string(r) + " is not supported in an inference plan";
  return false;
}

}  // namespace precis::rt
