// Helpers shared by the two halves of the sequence resolution (passes/sequences.h): the operators
// on resolved element lists (sequences.cc) and the Loops that carry sequences (sequence_loops.cc:
// unrolled, or kept with their appends as scan outputs and the result stacked). Internal to
// passes/; not an API.
#pragma once

#include <cstdint>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "compiler/ir/graph.h"
#include "compiler/ops/expand.h"

namespace precis::passes::seq {

// The sequence and optional operators of the default domain.
const std::set<std::string>& SequenceOps();
// A sequence or optional value (resolved or not).
bool IsContainer(const ir::Value* v);
// Unimplemented naming the node.
Status Refuse(const ir::Node& node, const std::string& why);
// The elements of input i, which must be a sequence the compiler resolved.
StatusOr<std::vector<ir::Value*>> Elements(const ir::Node& node, size_t i);
// A constant integer scalar (or one-element tensor), or an error naming what it is for.
StatusOr<int64_t> ConstantInt(const ir::Node& node, size_t i, const std::string& what);
// The node's output 0 is the resolved container `elements`; the node goes away.
bool Detach(ir::Graph& g, ir::Node& node, std::vector<ir::Value*> elements, ir::Type type);
ir::Value* ScalarConstant(ir::Graph& g, const std::string& base, ir::DType dtype, int64_t value);
// Squeeze/Unsqueeze over constant axes in the form of the model's opset.
ir::Value* AxesOp(ops::Expander& e, const char* op, ir::Value* x, std::vector<int64_t> axes);
// Copies `body`'s constants and nodes to the end of `g`; `map` takes body values to their copies.
Status SpliceBody(ir::Graph& g, const ir::Graph& body, const std::string& prefix, std::unordered_map<const ir::Value*, ir::Value*>& map);
ir::Value* Mapped(const std::unordered_map<const ir::Value*, ir::Value*>& map, ir::Value* v);

// sequence_loops.cc: a Loop carrying a sequence, unrolled or kept (*loop_kept); and a node
// reading a stacked sequence (ir::Value::stacked).
StatusOr<bool> UnrollLoop(ir::Graph& g, ir::Node& node, int64_t opset, bool* loop_kept);
StatusOr<bool> ReadStacked(ir::Graph& g, ir::Node& node, int64_t opset);
// A stacked sequence's dims of each element (ir::Value::stacked_dims) where its elements differ
// in shape; nullptr (and stacked_dims cleared) where a kept Loop's appended elements turned out
// to have one shape.
ir::Value* PaddedDims(ir::Value& seq);

}  // namespace precis::passes::seq
