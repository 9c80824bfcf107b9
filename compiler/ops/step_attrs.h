// Conversion of an IR node's attributes into plan step attributes (sorted by name), shared by
// the plan emitter and compile-time evaluation. Graph and type attributes have no plan form and
// are skipped (operators that need them are not lowered to single kernels). The node's opset
// version is added as the int attribute "opset" so kernels can follow version differences.
#pragma once

#include <flatbuffers/flatbuffers.h>

#include "compiler/ir/graph.h"
#include "runtime/plan/plan_generated.h"

namespace precis::ops {

flatbuffers::Offset<flatbuffers::Vector<flatbuffers::Offset<plan::Attr>>> BuildStepAttrs(
    flatbuffers::FlatBufferBuilder& b, const ir::Node& node, int64_t opset);

}  // namespace precis::ops
