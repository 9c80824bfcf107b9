// Adapters that let the CPU backend run steps of GPU plans with the ordinary CPU kernels:
//
// - ActivationEpilogue: a MatMul, Gemm, Conv or ConvTranspose step with an `activation`
//   attribute (Relu, Gelu, GeluTanh; written by the epilogue fusion pass) runs its kernel, then
//   applies the activation in place on the output in FP32, rounding once to the output dtype.
//   That is the unfused plan's arithmetic: the product stored, then the activation on it.
// - NhwcConv: a Conv step with `layout = "NHWC"` (written by the layout pass for tensor-core
//   convolutions) reads X as [N, H, W, C], W as [M, kH, kW, C/group] and writes Y as
//   [N, H', W', M]. The adapter transposes X (and W, once at Init when it is a constant) to
//   NCHW in scratch, runs the NCHW kernel the session chooses for the transposed step, and
//   transposes Y back. Transposes move bytes, so the numerics are the NCHW kernel's. A MaxPool
//   or AveragePool step with `layout = "NHWC"` (pools inside NHWC regions) has no W: only X and
//   Y are transposed (one output: no Indices).
#pragma once

#include <deque>
#include <functional>
#include <memory>
#include <vector>

#include "runtime/cpu/kernel.h"

namespace precis::rt {

enum class FusedActivation { kNone, kRelu, kGelu, kGeluTanh };

// Reads the `activation` attribute: kNone when absent; InvalidArgument naming the step otherwise.
Status ReadFusedActivation(const KernelArgs& args, FusedActivation* out);

class ActivationEpilogue : public Kernel {
 public:
  // `inner` has been initialized for the same step.
  explicit ActivationEpilogue(std::unique_ptr<Kernel> inner) : inner_(std::move(inner)) {}
  Status Init(const KernelArgs& args, const CpuContext& ctx) override;
  Status Run(const KernelArgs& args, CpuContext& ctx) override;
  size_t ScratchBytes() const override { return inner_->ScratchBytes(); }

 private:
  std::unique_ptr<Kernel> inner_;
  FusedActivation activation_ = FusedActivation::kNone;
};

class NhwcConv : public Kernel {
 public:
  // Chooses and initializes the kernel for the NCHW form of the step.
  using Chooser = std::function<StatusOr<std::unique_ptr<Kernel>>(const KernelArgs&)>;
  explicit NhwcConv(Chooser choose) : choose_(std::move(choose)) {}
  Status Init(const KernelArgs& args, const CpuContext& ctx) override;
  Status Run(const KernelArgs& args, CpuContext& ctx) override;
  size_t ScratchBytes() const override { return inner_scratch_ + shadow_bytes_; }

 private:
  Chooser choose_;
  std::unique_ptr<Kernel> inner_;
  KernelArgs inner_args_;
  std::deque<Tensor> nchw_;  // stable addresses: X, W, Y in NCHW
  std::vector<uint8_t> owned_w_;
  Tensor *x_ = nullptr, *w_ = nullptr, *y_ = nullptr;
  size_t x_offset_ = 0, y_offset_ = 0, w_offset_ = 0, inner_scratch_ = 0, shadow_bytes_ = 0;
  bool w_in_scratch_ = false;
};

// Moves a 4-D tensor of `element` bytes between layouts: dims are the source's, and
// dst[i0'...] = src[...] with dst's axes being src's axes in the order `perm`.
void Permute4D(const uint8_t* src, uint8_t* dst, const int64_t (&dims)[4], const int (&perm)[4], size_t element);

}  // namespace precis::rt
