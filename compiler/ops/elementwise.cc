// Semantics of elementwise arithmetic: Add, Sub, Mul, Div (numpy broadcasting, same dtype on
// both sides) and Relu (shape and dtype of its input).
#include "compiler/ops/op_registry.h"
#include "compiler/ops/infer_helpers.h"

namespace precis::ops {

void RegisterElementwiseOps(OpRegistry& r) {
  // Before opset 7 their broadcast/axis attributes are rewritten to numpy form first (ops/expand.h).
  for (const char* op : {"Add", "Sub", "Mul", "Div"})
    r.Register({"", op, 1, INT_MAX, InferArithmetic, true, 0, "", PrecisionClass::kFollow});
  r.Register({"", "Relu", 6, INT_MAX, InferSameAsInput0, true, 0, "", PrecisionClass::kFollow});
}

}  // namespace precis::ops
