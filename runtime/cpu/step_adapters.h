// Adapters that let the CPU backend run steps of GPU plans with the ordinary CPU kernels:
//
// - ActivationEpilogue: a MatMul, Gemm, Conv or ConvTranspose step with an `activation`
//   attribute (Relu, Gelu, GeluTanh, Clip; written by the epilogue fusion pass) runs its kernel, then
//   applies the activation in place on the output in FP32, rounding once to the output dtype.
//   That is the unfused plan's arithmetic: the product stored, then the activation on it.
// - NhwcStep: a step with `layout = "NHWC"` (written by the layout pass inside NHWC regions)
//   reads X as [N, H, W, C] and writes Y as [N, H', W', M]; a Conv's W is [M, kH, kW, C/group]
//   (`weights`). The adapter transposes X (and W, once at Init when it is a constant) to NCHW
//   in scratch, runs the NCHW kernel the session chooses for the transposed step, and transposes
//   Y back. Transposes move bytes, so the numerics are the NCHW kernel's. Pools (MaxPool
//   without Indices, AveragePool, GlobalAveragePool, GlobalMaxPool) and BatchNormalization
//   have no W: X and Y are transposed, other inputs (BatchNormalization's per-channel vectors)
//   pass through; one output.
#pragma once

#include <deque>
#include <functional>
#include <memory>
#include <vector>

#include "runtime/cpu/kernel.h"

namespace precis::rt {

enum class FusedActivation { kNone, kRelu, kGelu, kGeluTanh, kClip };

// A step's fused activation; Clip (CPU plans: a Conv's ReLU6) has its bounds. A fused Relu maps
// NaN to 0 and a fused Clip maps NaN to `lo`, as oneDNN's post-ops do.
struct FusedActivationSpec {
  FusedActivation kind = FusedActivation::kNone;
  float lo = 0, hi = 0;
};

// Reads the `activation` attribute (and activation_min / activation_max for Clip): kNone when
// absent; InvalidArgument naming the step otherwise.
Status ReadFusedActivation(const KernelArgs& args, FusedActivationSpec* out);

class ActivationEpilogue : public Kernel {
 public:
  // `inner` has been initialized for the same step.
  explicit ActivationEpilogue(std::unique_ptr<Kernel> inner) : inner_(std::move(inner)) {}
  Status Init(const KernelArgs& args, const CpuContext& ctx) override;
  Status Run(const KernelArgs& args, CpuContext& ctx) override;
  size_t ScratchBytes() const override { return inner_->ScratchBytes(); }

 private:
  std::unique_ptr<Kernel> inner_;
  FusedActivationSpec activation_;
};

class NhwcStep : public Kernel {
 public:
  // Chooses and initializes the kernel for the NCHW form of the step.
  using Chooser = std::function<StatusOr<std::unique_ptr<Kernel>>(const KernelArgs&)>;
  // `weights`: input 1 is a convolution's W (transposed too); otherwise inputs past X pass through.
  NhwcStep(Chooser choose, bool weights) : choose_(std::move(choose)), weights_(weights) {}
  Status Init(const KernelArgs& args, const CpuContext& ctx) override;
  Status Run(const KernelArgs& args, CpuContext& ctx) override;
  size_t ScratchBytes() const override { return inner_scratch_ + shadow_bytes_; }
  bool AppliesActivation() const override { return inner_ && inner_->AppliesActivation(); }

 private:
  Chooser choose_;
  std::unique_ptr<Kernel> inner_;
  KernelArgs inner_args_;
  std::deque<Tensor> nchw_;  // stable addresses: X, W, Y in NCHW
  std::vector<uint8_t> owned_w_;
  Tensor *x_ = nullptr, *w_ = nullptr, *y_ = nullptr;
  size_t x_offset_ = 0, y_offset_ = 0, w_offset_ = 0, inner_scratch_ = 0, shadow_bytes_ = 0;
  bool weights_ = true, w_in_scratch_ = false;
};

// Moves a 4-D tensor of `element` bytes between layouts: dims are the source's, and
// dst[i0'...] = src[...] with dst's axes being src's axes in the order `perm`.
void Permute4D(const uint8_t* src, uint8_t* dst, const int64_t (&dims)[4], const int (&perm)[4], size_t element);

}  // namespace precis::rt
