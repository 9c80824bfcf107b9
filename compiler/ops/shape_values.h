// Values that shape inference can know although they are computed at run time: the shape
// arithmetic of exported models (Shape -> Gather -> Unsqueeze -> Concat -> Reshape, Size, Range
// limits) over tensors with symbolic dims. Each integer value is a dim expression (ir::DimExpr),
// so a Reshape fed by such arithmetic gets symbolic output dims ("batch", "batch*seq") instead of
// unknown ones. The run-time kernels still compute the values; the plan's shape programs compute
// the same numbers from the bound dims.
#pragma once

#include <optional>
#include <vector>

#include "compiler/ir/graph.h"

namespace precis::ops {

// At most this many values are tracked per tensor (shape vectors are short).
inline constexpr size_t kMaxKnownValues = 64;

// The values of `node`'s output 0 from what is known of its inputs (constants or
// ir::Value::known_values), for Shape, Size, Identity, Cast, Reshape/Flatten/Squeeze/Unsqueeze,
// Concat, Gather, Slice, Add/Sub/Mul/Div, Equal, Where and ConstantOfShape in the default domain;
// nullopt when they are not known. Call after the node's output types are inferred.
std::optional<std::vector<ir::DimExpr>> KnownValues(const ir::Node& node, int64_t opset);

}  // namespace precis::ops
