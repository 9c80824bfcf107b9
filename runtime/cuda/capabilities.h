// The CUDA backend's capability table, as data (see runtime/cpu/capabilities.h for the CPU's and
// for how the compiler uses both): how the CUDA kernels take the float dtypes of a step. Plain C++
// with no CUDA headers, so the compiler reads it on machines without the toolkit.
//
// Rules, for a step with FP16/BF16 tensors:
// - A CUDA kernel takes FP32, FP16 or BF16 tensors of one float dtype as they are (FP32
//   arithmetic). Steps mixing float dtypes among the leading `low_inputs` inputs and the outputs
//   run widened (the kernels refuse mixed dtypes: DtypeMismatch, DtypeError, DtypeRefusal in
//   runtime/cuda/kernels), except in the kernels below.
// - kHalfToFp32Kernels: cuBLASLt products read FP16/BF16 operands and write FP32 (or their own
//   dtype) as they are.
// - kMixedFloatKernels take mixed float dtypes as they are (conversions).
// This table is read from the kernels' refusals and has not yet been checked on a GPU.
#pragma once

#include <array>
#include <string_view>

namespace precis::rt::cuda_capabilities {

inline constexpr auto kHalfToFp32Kernels = std::to_array<std::string_view>({"Gemm", "MatMul"});
inline constexpr auto kMixedFloatKernels = std::to_array<std::string_view>({"Cast", "CastLike"});

// Layouts: the kernels that also take channels-last steps (layout = "NHWC"): cuDNN's
// convolutions, the pools and BatchNormalization. The compiler's layout pass puts exactly these
// ops in NHWC regions (passes::NhwcOps, kept equal to this list by GpuPlans.NhwcListsAgree).
inline constexpr auto kNhwcKernels =
    std::to_array<std::string_view>({"AveragePool", "BatchNormalization", "Conv", "GlobalAveragePool", "GlobalMaxPool", "MaxPool"});

// Accumulation: FP32 for every summing kernel (cuBLASLt and cuDNN with FP32 compute types).

}  // namespace precis::rt::cuda_capabilities
