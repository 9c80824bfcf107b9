// The kernel names the CUDA backend implements. Plain C++ (no CUDA headers): the compiler reads it
// to refuse `--device cuda` plans with a step the GPU cannot run, on machines without the CUDA
// toolkit too. The CUDA registry must register exactly these names (cuda_backend_test checks it).
#pragma once

#include <algorithm>
#include <array>
#include <string_view>

namespace precis::rt {

inline constexpr auto kCudaKernelNames = std::to_array<std::string_view>({
    "Abs", "Acos", "Acosh", "Add", "And", "ArgMax",
    "ArgMin", "Asin", "Asinh", "Atan", "Atanh", "AveragePool",
    "BatchNormalization", "BatchNormalizationTraining", "BatchNormalizationTrainingGrad", "BitShift", "BitwiseAnd", "BitwiseNot",
    "BitwiseOr", "BitwiseXor", "Cast", "Ceil", "Celu", "Clip",
    "Compress", "Concat", "ConstantOfShape", "Conv", "ConvFilterGrad", "ConvTranspose",
    "Cos", "Cosh", "CumSum", "DepthToSpace", "Div", "Dropout",
    "DropoutTraining", "Einsum", "Elu", "Equal", "Erf", "Exp",
    "Expand", "EyeLike", "Floor", "FusedElementwise", "Gather", "GatherElements", "GatherND",
    "Gelu", "Gemm", "GlobalAveragePool", "GlobalLpPool", "GlobalMaxPool", "Greater",
    "GreaterOrEqual", "GroupNormalization", "HardSigmoid", "HardSwish", "Hardmax", "Identity",
    "InstanceNormalization", "IsInf", "IsNaN", "LRN", "LayerNormalization", "LeakyRelu",
    "Less", "LessOrEqual", "Log", "LogSoftmax", "LpNormalization", "LpPool",
    "MatMul", "Max", "MaxPool", "MaxPoolGrad", "Mean", "MeanVarianceNormalization",
    "Min", "Mish", "Mod", "Mul", "Neg", "NegativeLogLikelihoodLoss",
    "NonZero", "Not", "OneHot", "Or", "PRelu", "Pad",
    "Pow", "PredicatedCopy", "Range", "Reciprocal", "ReduceL1", "ReduceL2",
    "ReduceLogSum", "ReduceLogSumExp", "ReduceMax", "ReduceMean", "ReduceMin", "ReduceProd",
    "ReduceSum", "ReduceSumSquare", "Relu", "ReluGrad", "Reshape", "Resize",
    "ReverseSequence", "Round", "ScatterElements", "ScatterND", "Selu", "Shape",
    "Sigmoid", "Sign", "Sin", "Sinh", "Size", "Slice",
    "Softmax", "SoftmaxCrossEntropyLoss", "Softplus", "Softsign", "SpaceToDepth", "Split",
    "Sqrt", "Sub", "Sum", "Tan", "Tanh", "ThresholdedRelu",
    "Tile", "TopK", "Transpose", "Trilu", "UnscaleGradients", "Upsample",
    "Where", "Xor",
});

inline bool HasCudaKernel(std::string_view kernel) {
  return std::binary_search(kCudaKernelNames.begin(), kCudaKernelNames.end(), kernel);
}

}  // namespace precis::rt
