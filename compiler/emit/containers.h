// Container outputs of an entry program (plan.fbs Container): the model's outputs that are
// sequences or optionals decided at run time (ir::Model::output_containers), written with the
// tensor ids of their parts.
#pragma once

#include <string>
#include <vector>

#include "compiler/ir/graph.h"
#include "precis/status.h"
#include "runtime/plan/plan_format.h"

namespace precis::emit {

// The containers whose parts are all among the program's outputs (`output_ids`, named
// `output_names`); an empty offset where there are none. A container with only some of its parts
// there is an error naming `program`.
StatusOr<flatbuffers::Offset<flatbuffers::Vector<flatbuffers::Offset<plan::Container>>>> WriteContainers(
    flatbuffers::FlatBufferBuilder& b, const std::vector<ir::OutputContainer>& containers, const std::string& program,
    const std::vector<int>& output_ids, const std::vector<std::string>& output_names);

}  // namespace precis::emit
