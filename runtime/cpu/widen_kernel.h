// WidenKernel: runs a kernel written for FP32 on a step whose tensors are partly FP16/BF16, the way
// mixed-precision plans run on the CPU. Every 16-bit input is widened to FP32 (exact), the inner
// kernel computes in FP32, and every 16-bit output is rounded once to nearest even when stored:
// the numerics of a GPU kernel that reads 16-bit operands, accumulates in FP32 and writes 16 bits.
// A step may also read one dtype and write another (a compute op writing FP32 for a softmax).
//
// Constant 16-bit inputs are widened once at Init (so fast kernels can pre-pack weights); the
// others are widened into scratch at every Run. Run allocates nothing.
#pragma once

#include <deque>
#include <memory>
#include <vector>

#include "runtime/cpu/kernel.h"

namespace precis::rt {

class WidenKernel : public Kernel {
 public:
  explicit WidenKernel(std::unique_ptr<Kernel> inner) : inner_(std::move(inner)) {}
  Status Init(const KernelArgs& args, const CpuContext& ctx) override;
  Status Run(const KernelArgs& args, CpuContext& ctx) override;
  size_t ScratchBytes() const override { return inner_scratch_ + shadow_bytes_; }
  // The inner kernel applies a fused activation in FP32 before the output is rounded: for the
  // activations fused on the CPU (Relu, Clip with bounds the output dtype holds) the same values.
  bool AppliesActivation() const override { return inner_->AppliesActivation(); }

  // Whether any tensor of the step is FP16 or BF16.
  static bool HasHalfTensors(const KernelArgs& args);
  // Whether the step's float tensors do not all share one dtype.
  static bool HasMixedFloatTensors(const KernelArgs& args);

 private:
  struct Shadow {
    const Tensor* real;   // the step's tensor (its data pointer may change between runs)
    Tensor* wide;         // the FP32 tensor the inner kernel sees
    size_t offset;        // into this kernel's part of the scratch (activations only)
    bool is_output;
  };
  std::unique_ptr<Kernel> inner_;
  KernelArgs inner_args_;
  std::deque<Tensor> wide_;                  // stable addresses
  std::vector<std::vector<float>> owned_;    // widened constants (freed after Init where the inner kernel no longer reads them)
  std::vector<Shadow> shadows_;
  size_t inner_scratch_ = 0, shadow_bytes_ = 0;
};

}  // namespace precis::rt
