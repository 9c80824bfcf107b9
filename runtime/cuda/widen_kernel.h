// WidenKernel on CUDA: runs a kernel on a step whose 16-bit float tensors it does not handle, as
// the CPU backend's WidenKernel does (runtime/cpu/widen_kernel.h): 16-bit inputs are widened to
// FP32 into the step's scratch (constants once, at Init), the inner kernel runs in FP32, and
// 16-bit outputs are rounded once to nearest even. The backend wraps a step in it when the
// kernel's Init returns Unimplemented for the step's dtypes.
#pragma once

#include <deque>
#include <memory>
#include <vector>

#include "runtime/cuda/cuda_kernel.h"

namespace precis::rt::cuda {

class WidenKernel : public Kernel {
 public:
  explicit WidenKernel(std::unique_ptr<Kernel> inner) : inner_(std::move(inner)) {}
  Status Init(const KernelArgs& args, CudaContext& ctx) override;
  Status Run(const KernelArgs& args, CudaContext& ctx) override;
  size_t ScratchBytes() const override { return inner_scratch_ + shadow_bytes_; }
  size_t WorkspaceBytes() const override { return inner_->WorkspaceBytes(); }
  bool Capturable() const override { return inner_->Capturable(); }

  static bool HasHalfTensors(const KernelArgs& args);

 private:
  struct Shadow {
    bool is_output;
    size_t index;   // position in the step's inputs or outputs
    Tensor* wide;   // the FP32 tensor the inner kernel sees
    size_t offset;  // into this kernel's part of the scratch
  };
  std::unique_ptr<Kernel> inner_;
  KernelArgs inner_args_;
  std::deque<Tensor> wide_;                // stable addresses
  std::vector<std::vector<float>> host_;   // widened constants for the inner Init
  std::vector<Shadow> shadows_;
  std::vector<Tensor*> in_wide_, out_wide_;  // per position: the FP32 shadow, or nullptr
  size_t inner_scratch_ = 0, shadow_bytes_ = 0;
};

}  // namespace precis::rt::cuda
