// Values that shape inference can know although they are computed at run time: the shape
// arithmetic of exported models (Shape -> Gather -> Unsqueeze -> Concat -> Reshape, Size, Range
// limits) over tensors with symbolic dims. Each integer value is a dim expression (ir::DimExpr),
// so a Reshape fed by such arithmetic gets symbolic output dims ("batch", "batch*seq") instead of
// unknown ones. The run-time kernels still compute the values; the plan's shape programs compute
// the same numbers from the bound dims.
#pragma once

#include <optional>
#include <utility>
#include <string>
#include <vector>

#include "compiler/ir/graph.h"

namespace precis::ops {

// At most this many values are tracked per tensor (shape vectors are short).
inline constexpr size_t kMaxKnownValues = 64;

// The values of `node`'s output 0 from what is known of its inputs (constants or
// ir::Value::known_values), for Shape, Size, Identity, Cast, Reshape/Flatten/Squeeze/Unsqueeze,
// Concat, Gather, Slice, Add/Sub/Mul/Div, Equal, Less/Greater, Where and ConstantOfShape in the default domain;
// nullopt when they are not known. Call after the node's output types are inferred.
std::optional<std::vector<ir::DimExpr>> KnownValues(const ir::Node& node, int64_t opset);

// The values of a small float output 0 (at most kMaxKnownExprs elements) as value expressions
// (runtime/base/value_expr.h) over the main graph's float inputs, integer value symbols and
// constants, for Identity, Reshape/Flatten/Squeeze/Unsqueeze, Cast to a float type,
// Add/Sub/Mul/Div/Max/Min, Ceil/Floor/Neg/Abs/Relu/Round; nullopt otherwise.
inline constexpr size_t kMaxKnownExprs = 16;
std::optional<std::vector<std::string>> KnownExprs(const ir::Node& node, int64_t opset);
// Input i of `node` as value expressions (its known expressions, a small constant, or integer
// values that are constants or value symbols); nullopt otherwise.
std::optional<std::vector<std::string>> InputExprs(const ir::Node& node, size_t i, int64_t opset);
// An integer value (a polynomial over integer value symbols, no atoms) as a value expression.
std::optional<std::string> ValueExprOf(const ir::DimExpr& e);

// Operators whose attributes come as run-time values (value symbols, ir::DimExpr) compute their
// output dims with these; each returns nullopt where the expression would not fit.
using DimExprs = std::vector<ir::DimExpr>;
// The input dims as expressions (nullopt if one is unknown).
std::optional<DimExprs> DimExprsOf(const std::vector<ir::Dim>& dims);
// An axis value counted from the end when negative: a + rank * (a < 0).
std::optional<ir::DimExpr> AxisValue(const ir::DimExpr& a, int64_t rank);
// dims[index] for an index that is an expression.
std::optional<ir::DimExpr> DimAt(const DimExprs& dims, const ir::DimExpr& index);
// 1 where `j` is among `axes` (normalized), else 0.
std::optional<ir::DimExpr> IsAmong(const DimExprs& axes, int64_t j);
// How many of `axes` (normalized) are below `j`.
std::optional<ir::DimExpr> CountBelow(const DimExprs& axes, int64_t j);
// `dims` without the (normalized) `axes`: dim j of the result is the j-th kept dim.
std::optional<DimExprs> DropAxes(const DimExprs& dims, const DimExprs& axes);
// The length of ONNX Slice's [start, end) by `step` over `dim` (negative bounds count from the
// end, then clamping), as strided_views.h SliceRange computes it.
std::optional<ir::DimExpr> SliceLength(const ir::DimExpr& start, const ir::DimExpr& end, const ir::DimExpr& step, const ir::DimExpr& dim);
// floor(scale * element `element`) of input `i` of `node` as a value symbol ("$I_E_M"), where
// that input is a float input of the main graph with static shape and at most 16 elements (a
// Resize scale, a OneHot depth given as a graph input); nullopt otherwise.
std::optional<ir::DimExpr> FloatInputValue(const ir::Node& node, size_t i, size_t element, int64_t scale);
// Whether any of `values` is a run-time value (holds a value symbol).
bool AnyValueSymbols(const DimExprs& values);
// The dims of expressions (negative constants as unknown).
std::vector<ir::Dim> ToDims(const DimExprs& e);

// Data-dependent sizes (NonZero's count, Compress's kept slices, Unique's distinct values,
// NonMaxSuppression's selected boxes): the node's output gets a *data dim*, a symbol its step
// binds when it runs (docs/dynamic-shapes.md). The runtime plans the arena for an upper bound of
// it (DataDimBound) and prepares the later steps for the actual size once the step has run.
// The symbol is named after the node's output 0 ("count_<name>_<hash>"), so inferring the
// node again gives the same symbol.
inline constexpr const char* kDataDimPrefix = "count_";
ir::Dim DataDim(const ir::Node& node);
// The data dim `node` binds: the first output with a dim that is DataDim(node) (output 0 but for
// a Loop, whose scan outputs hold it) and its axis; nullopt when the node binds none.
std::optional<std::pair<size_t, size_t>> DataDimOutput(const ir::Node& node);
// DataDimOutput's axis.
std::optional<size_t> DataDimAxis(const ir::Node& node);
// An upper bound of the node's data dim from its input shapes; nullopt when none is known.
std::optional<ir::DimExpr> DataDimBound(const ir::Node& node);

}  // namespace precis::ops
