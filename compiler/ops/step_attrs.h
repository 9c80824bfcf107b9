// Conversion of an IR node's attributes into plan step attributes (sorted by name), shared by
// the plan emitter and compile-time evaluation. Graph and type attributes have no plan form and
// are skipped (operators that need them are not lowered to single kernels). The attributes are in
// kernel form: the differences between an operator's versions are rewritten into explicit
// attributes (step_attrs.cc lists them), so kernels never see the opset and one attribute parser
// per kernel serves every version and both backends.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include <flatbuffers/flatbuffers.h>

#include "compiler/ir/graph.h"
#include "runtime/plan/plan_schema.h"

namespace precis::ops {

// `extra` adds integer attributes that are not the node's (a control-flow step's program indices).
flatbuffers::Offset<flatbuffers::Vector<flatbuffers::Offset<plan::Attr>>> BuildStepAttrs(
    flatbuffers::FlatBufferBuilder& b, const ir::Node& node, int64_t opset,
    const std::vector<std::pair<std::string, int64_t>>& extra = {});

// The node's inputs in kernel form: for each kernel input slot, the index of the node input it
// takes (-1: omitted). The identity except where a version moved inputs (Resize 10).
std::vector<int> KernelInputOrder(const ir::Node& node, int64_t opset);

}  // namespace precis::ops
