// The CPU backend's capability table, as data: how its kernels take the float dtypes of a step.
// Plain C++ with no runtime headers: the compiler reads it (compiler/emit/widening.h) to decide
// at compile time which steps run widened on the CPU, records that in the plan (Step.widen) and
// the precision report; the CPU backend widens only the steps so marked (cpu_backend.cc).
//
// Rules, for a step with FP16/BF16 tensors:
// - By default a kernel (reference or fast) takes one float dtype, FP32, FP16, BF16 or FP64, for
//   all of its float tensors, as they are (16-bit values loaded to FP32, computed in FP32, rounded
//   once when stored). A step that mixes float dtypes among its leading `low_inputs` inputs and its
//   outputs (a compute op writing FP32 from FP16 operands, a softmax input cast folded into its
//   producer) runs widened: 16-bit inputs copied to FP32, the FP32 kernel, outputs rounded once.
// - kMixedFloatKernels take mixed float dtypes as they are (conversions).
// - kFp32ComputeKernels are oneDNN's: they take FP32 (and BF16 operands on CPUs with AVX512_BF16
//   or AMX-BF16, see runtime/cpu/kernels/dnnl_kernel.h), so their 16-bit steps are marked widened;
//   where the CPU has native BF16, the backend still runs a BF16 step on the native kernel (FP32
//   accumulation either way), and MatMul/Gemm steps with constant 16-bit weights run on a kernel
//   that widens the weights block by block (no FP32 copy of the weights; same arithmetic). A step
//   marked widened is first offered to the kernel on its own dtypes (cpu_backend.cc): MatMul/Gemm
//   with a 2-D 16-bit B that is not constant take it where HalfWeightsGemv/HalfWeightsGemm read
//   B in its 16 bits (few rows; AVX2 CPUs without AVX-512, dnnl_matmul.cc).
#pragma once

#include <algorithm>
#include <array>
#include <string_view>

namespace precis::rt::cpu_capabilities {

struct Fp32Kernel {
  std::string_view kernel;
  std::string_view why;  // for the report
};

inline constexpr auto kFp32ComputeKernels = std::to_array<Fp32Kernel>({
    {"Conv", "oneDNN's convolution computes from FP32 operands (BF16 natively only with AVX512_BF16/AMX)"},
    {"ConvTranspose", "oneDNN's transposed convolution computes from FP32 operands (BF16 natively only with AVX512_BF16/AMX)"},
    {"Gemm", "oneDNN's matmul computes from FP32 operands (BF16 natively only with AVX512_BF16/AMX)"},
    {"MatMul", "oneDNN's matmul computes from FP32 operands (BF16 natively only with AVX512_BF16/AMX)"},
});

// Conversions, and the control-flow steps (If, Loop, Scan), which only copy values in and out of
// their bodies, whatever their dtypes.
inline constexpr auto kMixedFloatKernels = std::to_array<std::string_view>({"Cast", "CastLike", "If", "Loop", "Scan"});

// Layouts: every kernel runs NCHW (the ONNX layout); these also run the NHWC steps of GPU plans
// (layout = "NHWC"), through adapters that transpose around the NCHW kernel (step_adapters.h).
// It must cover runtime/cuda/capabilities.h's kNhwcKernels, so that GPU plans run on the CPU.
inline constexpr auto kNhwcKernels =
    std::to_array<std::string_view>({"AveragePool", "BatchNormalization", "Conv", "GlobalAveragePool", "GlobalMaxPool", "MaxPool"});

// Accumulation: every kernel that sums accumulates in FP32 (FP64 for FP64 steps), whatever its
// storage dtype; the plan's Step.accumulation_dtype records it.

}  // namespace precis::rt::cpu_capabilities
