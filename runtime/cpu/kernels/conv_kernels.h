// The fast Conv variants. The registered fast "Conv" kernel (dnnl_conv.cc) tries them in this
// order and keeps the first whose Init succeeds; each declines (Init returns Unimplemented) a step
// it does not fit, so the next one, and finally the reference kernel, takes it. They are exposed
// for tests, which check each one directly (selected where it applies, declined elsewhere).
//
// - Depthwise: f32 2-D depthwise convolution (group == C == M), square 3x3 or 5x5 kernel, stride
//   1 or 2 in both dims, any dilation and padding; a direct loop on NCHW (fast_conv.cc).
// - Direct pointwise and pointwise: f32 1x1 convolution, group 1, stride 1, no padding: one GEMM
//   per image, Y[n] (M x HW) = W (M x C) * X[n] (C x HW) + B, on the plain layouts (no activation
//   reorders): a register-tiled AVX2 kernel with the bias folded in (fast_pointwise.cc), or
//   oneDNN's matmul with the bias as a post-op (dnnl_conv.cc).
// - oneDNN: any f32 Conv with 1 to 3 spatial dims, channel-blocked (dnnl_conv.cc); also BF16
//   X and W (BF16/F32 B and Y) on CPUs with native BF16, the only variant that takes BF16.
//
// Which variant is faster depends on the shape, not only on whether it applies:
// PreferConvVariant says whether the fast Conv should try `variant` for the step (measured
// policy, see dnnl_conv.cc); the oneDNN convolution is always tried last.
#pragma once

#include <memory>

#include "runtime/cpu/kernel.h"

namespace precis::rt {

std::unique_ptr<Kernel> MakeDepthwiseConvKernel();  // fast_conv.cc
std::unique_ptr<Kernel> MakeDirectPointwiseConvKernel();  // fast_pointwise.cc
std::unique_ptr<Kernel> MakePointwiseConvKernel();  // dnnl_conv.cc
std::unique_ptr<Kernel> MakeDnnlConvKernel();       // dnnl_conv.cc
// The channels-last Conv (layout = "NHWC" steps): oneDNN's convolution on X [N, H, W, C] and
// W [M, kH, kW, C/group] without reorders of X or Y (dnnl_conv.cc); 16-bit weights of group-1
// steps read as they are (MakeHalfWeightsConvKernel); other 16-bit steps with large activations
// and small constant weights in bands of output rows (MakeBandedHalfConvKernel).
std::unique_ptr<Kernel> MakeNhwcConvKernel();
// FP16 channels-last convolutions (BF16 too where oneDNN has no native BF16) computed in FP32 one
// band of output rows at a time (dnnl_conv_bands.cc).
std::unique_ptr<Kernel> MakeBandedHalfConvKernel();
// Channels-last convolutions of group 1 with 16-bit weights (FP16; BF16 where oneDNN has no
// native BF16) as an implicit GEMM reading the weights where they lie (HalfWeightsConv,
// dnnl_conv_bands.cc); where UseHalfWeightsConv() and the session did not ask for FP32 weights.
std::unique_ptr<Kernel> MakeHalfWeightsConvKernel();

bool PreferConvVariant(const KernelArgs& args, KernelFactory variant);  // dnnl_conv.cc

}  // namespace precis::rt
