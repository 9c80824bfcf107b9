// Sequences and optionals resolved at compile time. Precis plans hold tensors only: a sequence
// whose length and elements the compiler can follow (SequenceConstruct, SequenceInsert/Erase at
// known positions, SplitToSequence along a static dim, sequence inputs of a given length) is
// kept as the list of its element values (ir::Value::elements), and the operators that read it
// become tensor operators: SequenceAt an Identity of the element, ConcatFromSequence a Concat,
// SequenceLength a constant, SequenceMap one copy of its body per element. An optional is a list
// of none or one. If nodes whose branches give sequences of one length get one output per
// element. Graph outputs that are sequences become one output per element, NAME[0], NAME[1]...;
// an absent optional output is no output.
//
// Positions computed at run time (SequenceAt/Insert/Erase) work over elements of static shapes
// of one rank: a Gather from the stacked elements (padded to the largest, each result sliced back
// to dims that the plan computes from the position when it runs).
//
// A Loop of a run-time trip count (or condition, or a trip count past the unrolling limit) that
// carries a sequence is kept where the body only appends to it (one SequenceInsert without a
// position, the list pattern of scripted exports): the appended tensor becomes a scan output,
// and the sequence after the loop is kept as one tensor (ir::Value::stacked), read by
// ConcatFromSequence, SequenceAt, SequenceLength and further appends as tensor operators over
// the stack.
//
// Refused, naming the node: a length known only at run time otherwise (a split given as a
// run-time scalar, a Loop of a run-time trip count whose body reads its sequence, elements whose
// shape changes with the iteration, a Scan carrying a sequence, a graph output of such a
// sequence), branches whose sequences differ in length.
//
// Shape inference (passes/infer_shapes.cc) calls these as it reaches each node, so element types
// are known when a sequence is read.
#pragma once

#include "compiler/ir/graph.h"

namespace precis::passes {

// Whether the node is a sequence or optional operator (SequenceAt, Optional...).
bool IsSequenceOperator(const ir::Node& node);

// For a node that makes or reads a sequence or optional. Returns whether the node was removed or
// replaced (inference resumes at its old position); *handled tells whether the node was one, and
// *loop_kept whether it was a Loop replaced by one whose sequence appends are scan outputs.
StatusOr<bool> ResolveSequenceNode(ir::Graph& g, ir::Node& node, int64_t opset, bool* handled, bool* loop_kept = nullptr);

// An If whose branches (already inferred) give sequences or optionals: replaced by an If with one
// output per element. Returns whether it was replaced.
StatusOr<bool> FlattenIfContainers(ir::Graph& g, ir::Node& node);

// An If whose condition inference found constant (OptionalHasElement of a resolved optional,
// shape checks that fold) is replaced by the branch taken, before its branches are inferred: the
// other one may not be valid for this input (OptionalGetElement of an absent optional), and a
// Loop unrolled by iteration number decides its `if i == 0:` branches so.
StatusOr<bool> InlineConstantIf(ir::Graph& g, ir::Node& node, int64_t opset);

// After inference: the main graph's sequence and optional outputs become their elements, and
// resolved values nothing reads any more are dropped (in every graph).
Status FinishSequences(ir::Model& model);

}  // namespace precis::passes
