// Common shape inference functions used by several operator families.
#pragma once

#include "compiler/ops/op_registry.h"

namespace precis::ops {

// Output 0 has input 0's type (unary elementwise ops).
Status InferSameAsInput0(InferContext& ctx);
// Output 0: both inputs' dtype (must agree), broadcast shape.
Status InferBroadcastBinary(InferContext& ctx);
// Before opset 7, binary operators broadcast only with broadcast = 1, B's shape matching a
// contiguous run of A's dims at `axis` (rewritten to numpy form first, ops/expand.h) or at the
// end (numpy's rule); with broadcast = 0 the shapes must be equal.
Status CheckLegacyBroadcast(const InferContext& ctx);
// InferBroadcastBinary after CheckLegacyBroadcast (Add, Sub, Mul, Div).
Status InferArithmetic(InferContext& ctx);
// Output 0: bool, broadcast shape of inputs 0 and 1 (comparisons).
Status InferBroadcastCompare(InferContext& ctx);
// Output 0: dtype of input 0, broadcast shape of all present inputs (Max, Min, Sum, Mean, Where
// uses its own).
Status InferBroadcastVariadic(InferContext& ctx);
// The integer products (MatMulInteger, ConvInteger; QLinearMatMul, QLinearConv with `qlinear`):
// inputs 0 and `second` must be int8 or uint8; the output dtype is int32, or y_zero_point's
// (input 7) for the QLinear forms.
StatusOr<ir::DType> QuantProductDType(InferContext& ctx, size_t second, bool qlinear);

}  // namespace precis::ops
