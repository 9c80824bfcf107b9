// The table of kernels that run in place (see in_place.h): element-by-element kernels and row-wise
// normalizations that read each element before writing it, plus Reshape (a copy onto itself).
// FusedElementwise runs in place only where its program allows (fused_program.h InPlaceOk: the
// compiler asks the same of the node, the kernel refuses other steps).
#include "runtime/exec/in_place.h"

#include <algorithm>
#include <array>

namespace precis::rt {
namespace {

// Sorted, so that lookups are a binary search and a duplicate shows up in review.
constexpr std::array<std::string_view, 77> kInPlaceOnInput0 = {
    "Abs", "Acos", "Acosh", "Add", "And", "Asin", "Asinh", "Atan", "Atanh", "BatchNormalization",
    "BitShift", "BitwiseAnd", "BitwiseNot", "BitwiseOr", "BitwiseXor", "Ceil", "Celu", "Clip", "Cos", "Cosh",
    "CumProd", "CumSum", "Div", "Dropout", "Elu", "Erf", "Exp", "Floor", "FusedElementwise", "Gelu", "GroupNormalization", "HardSigmoid",
    "HardSwish", "Hardmax", "Identity", "InstanceNormalization", "LayerNormalization", "LeakyRelu", "Log",
    "LogSoftmax", "LpNormalization", "Max", "Mean", "MeanVarianceNormalization", "Min", "Mish", "Mod", "Mul",
    "Neg", "Not", "Or", "PRelu", "Pow", "Reciprocal", "Relu", "Reshape", "Round", "ScatterElements",
    "ScatterND", "Selu", "Shrink", "Sigmoid", "Sign", "Sin", "Sinh", "Softmax", "Softplus", "Softsign", "Sqrt",
    "Sub", "Sum", "Tan", "Tanh", "TensorScatter", "ThresholdedRelu", "Trilu", "Xor"};
static_assert(std::is_sorted(kInPlaceOnInput0.begin(), kInPlaceOnInput0.end()));

}  // namespace

int InPlaceInput(std::string_view kernel) {
  return std::binary_search(kInPlaceOnInput0.begin(), kInPlaceOnInput0.end(), kernel) ? 0 : -1;
}

bool SharesAnyInput(std::string_view kernel) { return kernel == "FusedElementwise"; }

}  // namespace precis::rt
